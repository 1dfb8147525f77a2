#!/usr/bin/env bash
# Probes of the sm90 epilogue on 4095x4097x4093 (odd ldc), each row against cuBLAS in the same process (2026-12-02).
#   direct (default): what the direct epilogue (element stores) costs it, against the same shape with an aligned ldc
#     and 4096^3 with the direct epilogue pinned; 128x256 tiles with stream-K on the 4097-column shape (a 33rd,
#     one-column tile column); 256x128 tiles on 4096^3.
#   staged: after the staged stores, dispatch's config (a staging epilogue whose tile the warpgroups store), the
#     previous dispatch's config pinned (direct stores), half staging tiles with 4 stages, the deferred epilogue.
# Usage: bench/sweeps/epilogue-probe.sh OUT.csv [direct|staged]
set -uo pipefail
out=${1:?usage: epilogue-probe.sh OUT.csv [direct|staged]}
mode=${2:-direct}
tf=build/tileforge
export TILEFORGE_DB=/tmp/epilogue-probe/no-db/tune.db
: >"$out"
row() {  # row LABEL bench-args...
  local label=$1
  shift
  local rows
  rows=$(timeout 90 $tf bench --device cuda --dtype f16 --no-db --min-reps 20 --min-time 0.05 --max-time 0.3 \
           --format csv -q "$@" 2>/dev/null)
  [[ -s $out ]] || echo "label,$(head -1 <<<"$rows")" >"$out"
  tail -n +2 <<<"$rows" | sed "s|^|$label,|" >>"$out"
}
odd=4095x4097x4093
case $mode in
  direct)
    big="--set BLOCK_M=128 --set BLOCK_N=256 --set STAGES=3 --set GROUP_M=16 --set CONSUMERS=2"
    row 4096/dispatch --shape 4096x4096x4096
    row 4096/direct --shape 4096x4096x4096 --set EPILOGUE=0 --set STMATRIX=0
    row 4096/128x256-direct --shape 4096x4096x4096 $big --set EPILOGUE=0 --set STMATRIX=0
    row 4095/dispatch --shape $odd
    row 4095/ldc4104 --shape $odd --ldc 4104
    row 4095/ldc4104-128x256-tma --shape $odd --ldc 4104 $big --set EPILOGUE=1
    row 4095/128x256-direct --shape $odd $big --set EPILOGUE=0 --set STMATRIX=0
    row 4095/128x256-streamk --shape $odd $big --set EPILOGUE=0 --set STMATRIX=0 --set STREAM_K=1
    row 4096/256x128 --shape 4096x4096x4096 --set BLOCK_M=256 --set BLOCK_N=128 --set CONSUMERS=2 --set STAGES=4
    row 3000/dispatch --shape 3000x3000x3000
    ;;
  staged)
    prev="--set BLOCK_M=256 --set BLOCK_N=128 --set CONSUMERS=2 --set STAGES=4 --set GROUP_M=4 --set COPY_AB=1"
    row 4095/dispatch --shape $odd
    row 4095/previous-direct --shape $odd $prev --set EPILOGUE=0 --set STMATRIX=0
    row 4095/staged-s4 --shape $odd $prev --set EPILOGUE=1 --set STMATRIX=1 --set EPI_SPLIT=2
    row 4095/deferred --shape $odd $prev --set STAGES=3 --set EPILOGUE=2 --set STMATRIX=1
    row 4095/ldc4104 --shape $odd --ldc 4104
    ;;
  *) echo "epilogue-probe.sh: mode '$mode' is not known (allowed: direct, staged)" >&2; exit 2 ;;
esac
