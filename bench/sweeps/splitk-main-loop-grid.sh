#!/usr/bin/env bash
# The one-wave split-K main loop over tiles, slices and clusters of two, at 256x256x16384 and 512x512x8192: each
# config benched whole (probe 0, verified) and with no fix-up at all (TILEFORGE_SM90_FIXUP_PROBE=1, C wrong by
# design: the main loop, launch and fill), one bench process each, cuBLAS beside. The rows to fit the cost model's
# one-wave main loop by (docs/PERF-LOG.md, thirtieth session: the chip, not the SMs, bounds it there).
#   bench/sweeps/splitk-main-loop-grid.sh OUTDIR
# Writes OUTDIR/grid.csv (label, probe, then the bench's CSV columns) and OUTDIR/run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
source scripts/lib/bench_rows.sh
out=${1:?usage: splitk-main-loop-grid.sh OUTDIR}
mkdir -p "$out"
log="$out/run.log" csv="$out/grid.csv"
: >"$log" && : >"$csv"
export TILEFORGE_DB=/tmp/tileforge-splitk-main-loop-grid/no-db/tune.db
# SHAPE BLOCK_MxBLOCK_N STAGES CONSUMERS SPLIT_K
configs=(
  "256x256x16384 64x128 8 1 16" "256x256x16384 64x64 8 1 8"
  "256x256x16384 128x128 6 2 16" "256x256x16384 128x128 6 2 8"
  "512x512x8192 128x128 6 2 8" "512x512x8192 64x128 8 1 4" "512x512x8192 64x64 8 1 2" "512x512x8192 128x256 4 2 8"
)
for c in "${configs[@]}"; do
  read -r shape tile st cons sk <<<"$c"
  for cl in "1 1" "2 1" "1 2"; do
    read -r cm cn <<<"$cl"
    for probe in 1 0; do
      label="$shape/${tile}-st$st-c$cons-sk$sk-${cm}x$cn"
      bench_probe "$csv" "$log" "$probe" "$label" build/tileforge "$shape" BLOCK_M="${tile%x*}" BLOCK_N="${tile#*x}" \
        STAGES="$st" CONSUMERS="$cons" SPLIT_K="$sk" STREAM_K=0 CLUSTER_M="$cm" CLUSTER_N="$cn"
      echo "$label probe $probe rc=$?" >>"$log"
    done
  done
done
