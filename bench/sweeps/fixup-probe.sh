#!/usr/bin/env bash
# What the split-K fix-up costs in dispatch's configs of the split-K shapes: each config benched with the fix-up
# whole (TILEFORGE_SM90_FIXUP_PROBE unset), without it (1: every slice writes its own partial as C), with the
# partial stores only (2) and with the stores, the counter and the wait for every slice but no sum (4: the shared
# sum's), one bench process each, cuBLAS beside in the same process. Rows with a probe set have C
# wrong by design (their error columns say so); their times bound what any other reduction could save.
#   bench/sweeps/fixup-probe.sh OUTDIR
# Writes OUTDIR/fixup-probe.csv (label, probe, then the bench's CSV columns) and OUTDIR/fixup-probe.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
source scripts/lib/bench_rows.sh
out=${1:?usage: fixup-probe.sh OUTDIR}
mkdir -p "$out"
csv="$out/fixup-probe.csv" log="$out/fixup-probe.log"
: >"$csv"
: >"$log"
export TILEFORGE_DB=/tmp/tileforge-fixup-probe/no-db/tune.db
# SHAPE, then its pins (dispatch's config on the H100 and H200 records).
configs=(
  "512x512x8192 BLOCK_M=128 BLOCK_N=128 STAGES=6 CONSUMERS=2 SPLIT_K=8"
  "256x256x16384 BLOCK_M=64 BLOCK_N=128 STAGES=8 CONSUMERS=1 SPLIT_K=16"
  "256x256x16384 BLOCK_M=64 BLOCK_N=128 STAGES=8 CONSUMERS=1 SPLIT_K=15 CLUSTER_M=2 CLUSTER_N=2"
)
for round in 1 2; do
  for c in "${configs[@]}"; do
    read -r shape pins <<<"$c"
    for probe in ${PROBES:-0 1 2 4}; do
      # shellcheck disable=SC2086  # the pins, one word each
      bench_probe "$csv" "$log" "$probe" "$shape/${pins// /-}/r$round" build/tileforge "$shape" $pins
      echo "$shape $pins probe $probe round $round rc=$?" >>"$log"
    done
  done
done
