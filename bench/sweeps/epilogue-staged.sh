#!/usr/bin/env bash
# After the staged stores (2026-12-02): 4095x4097x4093 (odd ldc) as dispatched (a staging epilogue whose tile the
# warpgroups store), the previous dispatch's config pinned (direct stores), and the deferred staging epilogue; each
# row against cuBLAS in the same process. Usage: bench/sweeps/epilogue-staged.sh OUT.csv
set -uo pipefail
out=${1:?usage: epilogue-staged.sh OUT.csv}
tf=build/tileforge
export TILEFORGE_DB=/tmp/epilogue-staged/no-db/tune.db
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
prev="--set BLOCK_M=256 --set BLOCK_N=128 --set CONSUMERS=2 --set STAGES=4 --set GROUP_M=4 --set COPY_AB=1"
row 4095/dispatch --shape 4095x4097x4093
row 4095/previous-direct --shape 4095x4097x4093 $prev --set EPILOGUE=0 --set STMATRIX=0
row 4095/staged-s4 --shape 4095x4097x4093 $prev --set EPILOGUE=1 --set STMATRIX=1 --set EPI_SPLIT=2
row 4095/deferred --shape 4095x4097x4093 $prev --set STAGES=3 --set EPILOGUE=2 --set STMATRIX=1
row 4095/ldc4104 --shape 4095x4097x4093 --ldc 4104
