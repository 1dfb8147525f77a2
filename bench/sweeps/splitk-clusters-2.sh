#!/usr/bin/env bash
# Split-K in clusters of two against no cluster at 256x256x16384 and 512x512x8192, in one process per row with cuBLAS
# beside, two rounds: dispatch's config and the same tiles and slices in 1x1, 2x1 and 1x2 clusters (and the 2x2
# cluster of 15 slices), then the main loop alone (TILEFORGE_SM90_FIXUP_PROBE=1, C wrong by design) at 16, 8, 4 and
# 2 slices, with and without a 2x1 cluster: how the main loop's time follows the slice count and the L2 reads.
#   bench/sweeps/splitk-clusters-2.sh OUTDIR
# Writes OUTDIR/clusters.csv and OUTDIR/probe.csv (label, probe, then the bench's CSV columns) and OUTDIR/run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
source scripts/lib/bench_rows.sh
out=${1:?usage: splitk-clusters-2.sh OUTDIR}
mkdir -p "$out"
log="$out/run.log"
: >"$log" && : >"$out/clusters.csv" && : >"$out/probe.csv"
export TILEFORGE_DB=/tmp/tileforge-splitk-clusters-2/no-db/tune.db
t64="BLOCK_M=64 BLOCK_N=128 STAGES=8 CONSUMERS=1" t128="BLOCK_M=128 BLOCK_N=128 STAGES=6 CONSUMERS=2"
row() {  # row CSV PROBE SHAPE [PINS...]
  local csv=$1 probe=$2 shape=$3 label
  shift 3
  label="$shape/$(IFS=-; echo "${*:-dispatch}")"
  bench_probe "$csv" "$log" "$probe" "$label" build/tileforge "$shape" "$@"
  echo "$label probe $probe rc=$?" >>"$log"
}
clusters() {  # clusters SHAPE SLICES [PINS...]: dispatch's config, then the tile's slices in 1x1, 2x1 and 1x2 clusters
  local shape=$1 sk=$2 cm cn
  shift 2
  row "$out/clusters.csv" 0 "$shape"
  for c in "1 1" "2 1" "1 2"; do
    read -r cm cn <<<"$c"
    row "$out/clusters.csv" 0 "$shape" "$@" SPLIT_K="$sk" CLUSTER_M="$cm" CLUSTER_N="$cn"
  done
}
for _ in 1 2; do  # two rounds
  clusters 256x256x16384 16 $t64
  row "$out/clusters.csv" 0 256x256x16384 $t64 SPLIT_K=15 CLUSTER_M=2 CLUSTER_N=2
  clusters 512x512x8192 8 $t128
  row "$out/clusters.csv" 0 512x512x8192 $t64 SPLIT_K=8 CLUSTER_M=2 CLUSTER_N=1
  row "$out/clusters.csv" 0 512x512x8192 $t64 SPLIT_K=4 CLUSTER_M=2 CLUSTER_N=1
done
for sk in 16 8 4 2; do row "$out/probe.csv" 1 256x256x16384 $t64 SPLIT_K=$sk; done
for sk in 8 4 2; do row "$out/probe.csv" 1 512x512x8192 $t128 SPLIT_K=$sk; done
row "$out/probe.csv" 1 256x256x16384 $t64 SPLIT_K=16 CLUSTER_M=2 CLUSTER_N=1
row "$out/probe.csv" 0 256x256x16384 $t64 SPLIT_K=16 CLUSTER_M=2 CLUSTER_N=1
for sk in 16 8; do row "$out/probe.csv" 1 256x256x16384 $t64 SPLIT_K=$sk; done
