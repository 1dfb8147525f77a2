#!/usr/bin/env bash
# One-off probe (2026-12-02): what the direct epilogue (odd ldc, element stores) costs 4095x4097x4093, against the
# same shape with an aligned ldc and 4096^3 with the direct epilogue pinned; 128x256 tiles with stream-K on the
# 4097-column shape (a 33rd column of one element); 256x128 tiles on 4096^3. Each row against cuBLAS in the same
# process. Usage: bench/sweeps/epilogue-probe.sh OUT.csv
set -uo pipefail
out=${1:?usage: epilogue-probe.sh OUT.csv}
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
big="--set BLOCK_M=128 --set BLOCK_N=256 --set STAGES=3 --set GROUP_M=16 --set CONSUMERS=2"
row 4096/dispatch --shape 4096x4096x4096
row 4096/direct --shape 4096x4096x4096 --set EPILOGUE=0 --set STMATRIX=0
row 4096/128x256-direct --shape 4096x4096x4096 $big --set EPILOGUE=0 --set STMATRIX=0
row 4095/dispatch --shape 4095x4097x4093
row 4095/ldc4104 --shape 4095x4097x4093 --ldc 4104
row 4095/ldc4104-128x256-tma --shape 4095x4097x4093 --ldc 4104 $big --set EPILOGUE=1
row 4095/128x256-direct --shape 4095x4097x4093 $big --set EPILOGUE=0 --set STMATRIX=0
row 4095/128x256-streamk --shape 4095x4097x4093 $big --set EPILOGUE=0 --set STMATRIX=0 --set STREAM_K=1
row 4096/256x128 --shape 4096x4096x4096 --set BLOCK_M=256 --set BLOCK_N=128 --set CONSUMERS=2 --set STAGES=4
row 3000/dispatch --shape 3000x3000x3000
