#!/usr/bin/env bash
# The sm90 producer's cp.async path against TMA on operands whose rows start off 32-byte sectors (issue 13's
# 1000^3 and 3000^3): the GPU tests of the device reference and of the sm90 family (once as built, once with every
# operand copied by cp.async where the config allows), then one bench process per way of reading the operands over
# SHAPES, each beside cuBLAS. Writes at most 8 files into OUTDIR.
#
#   scripts/gpu-cp-async OUTDIR [tests|bench|all]
#
# Environment (optional): SHAPES (default "3000x3000x3000 1000x1000x1000 1024x1000x1024 1000x1024x1024
# 3000x3000x3072"). TILEFORGE_SM90_CP_ASYNC (bit 0 A, bit 1 B) is the experiment's switch; it is set per process here.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: scripts/gpu-cp-async OUTDIR [tests|bench|all]}
mode=${2:-all}
mkdir -p "$out"
tf=build/tileforge
export TILEFORGE_CACHE_DIR=${TILEFORGE_CACHE_DIR:-/tmp/tileforge-cp-async/kernels}
shapes=${SHAPES:-"3000x3000x3000 1000x1000x1000 1024x1000x1024 1000x1024x1024 3000x3000x3072"}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
  $tf devices 2>&1
} >"$out/env.txt" 2>&1

if [[ $mode != bench ]]; then
  {
    echo "== as built"
    timeout 240 build/tests/tileforge_tests --gtest_brief=1 --gtest_filter='GpuTimerVerify*:Sm90Gpu*:StreamWorkspace*'
    echo "exit $?"
    echo "== TILEFORGE_SM90_CP_ASYNC=3"
    TILEFORGE_SM90_CP_ASYNC=3 timeout 240 build/tests/tileforge_tests --gtest_brief=1 --gtest_filter='Sm90Gpu*'
    echo "exit $?"
  } >"$out/tests.txt" 2>&1
  grep -E "^== |exit|PASSED|FAILED" "$out/tests.txt"
fi

if [[ $mode != tests ]]; then
  args=(bench --device cuda --dtype f16 --no-db --format csv)
  for s in $shapes; do args+=(--shape "$s"); done
  run() {  # label, CP_ASYNC bits, --set pins...
    local label=$1 bits=$2; shift 2
    echo "== $label (TILEFORGE_SM90_CP_ASYNC=$bits $*)"
    TILEFORGE_SM90_CP_ASYNC=$bits timeout 150 $tf "${args[@]}" "$@" 2>&1
  }
  {
    run "dispatch (TMA, COPY_AB as planned)" 0
    run "B by cp.async, no copy" 2 --set COPY_AB=0
    run "A and B by cp.async, no copy, no cluster" 3 --set COPY_AB=0 --set CLUSTER_M=1 --set CLUSTER_N=1
    run "B by cp.async, no copy, no cluster" 2 --set COPY_AB=0 --set CLUSTER_M=1 --set CLUSTER_N=1
    run "TMA, no copy, no cluster" 0 --set COPY_AB=0 --set CLUSTER_M=1 --set CLUSTER_N=1
    run "dispatch again (TMA, COPY_AB as planned)" 0
  } >"$out/bench.txt" 2>&1
  grep -vE "^\s*$" "$out/bench.txt" | tail -60
fi
