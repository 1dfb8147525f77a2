#!/usr/bin/env bash
# Clusters of four and eight on a GPU whose chip record lists none resident (the H100's did until 2026-12-06): the
# four configs of Sm90GpuTest.ClustersOfFourAndEightSplitEveryOperandLayout, planned with the H200's record (the same
# GH100 die), each benched in every layout in f16 and bf16 at 1000^3 and verified against the float64 reference by the
# bench. A first check of a kernel change to the cluster's synchronisation where no H200 is lent; the GPU test itself
# runs where the record lists them.
#   bench/sweeps/clusters-4-8-check.sh OUTDIR
# Writes OUTDIR/clusters-4-8.csv (config, then the bench's CSV columns) and OUTDIR/clusters-4-8.log; exits 1 when a
# bench fails (a refused pin, a wrong result) or a row fell back to another kernel or is not verified.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
source scripts/lib/bench_rows.sh
out=${1:?usage: clusters-4-8-check.sh OUTDIR}
mkdir -p "$out"
csv="$out/clusters-4-8.csv" log="$out/clusters-4-8.log"
: >"$csv"
: >"$log"
status=0
# BLOCK_M BLOCK_N STAGES CONSUMERS CLUSTER_M CLUSTER_N, as the test's sm90_config(...) names them.
for c in "128 128 4 2 2 2" "64 192 6 1 4 2" "64 192 6 1 8 1" "128 128 4 2 1 4"; do
  read -r bm bn st co cm cn <<<"$c"
  for dt in f16 bf16; do
    label="${bm}x${bn}-s${st}-c${co}-${cm}x${cn}-$dt"
    rc=0
    bench_rows "$csv" "$log" config "$label" build/tileforge 1000x1000x1000 --profile h200 --layout all \
      --set BLOCK_M="$bm" --set BLOCK_N="$bn" --set STAGES="$st" --set CONSUMERS="$co" --set CLUSTER_M="$cm" \
      --set CLUSTER_N="$cn" --dtype "$dt" || rc=$?
    echo "$label rc=$rc" | tee -a "$log"
    ((rc == 0)) || status=1
  done
done
# A kernel that failed to launch falls back to another family with exit 0: such rows, and unverified ones, fail too.
python3 - "$csv" <<'PY' || status=1
import csv, sys
bad = [r["config"] + " " + r.get("layout", "") for r in csv.DictReader(open(sys.argv[1]))
       if r.get("fallback", "false") != "false" or r.get("verified", "true") != "true"]
for b in bad:
    print("clusters-4-8-check: fell back or unverified:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit "$status"
