#!/usr/bin/env bash
# Ours (dispatch's config) and cuBLAS in three L2 states, one bench process per row: the contract's write scrub
# (dirty lines the kernel's misses write back), a read scrub (clean lines; TILEFORGE_SCRUB=read) and no scrub
# (TILEFORGE_SCRUB=warm: the operands stay in the L2 from rep to rep). Where ours runs split-K, also its main loop
# alone (TILEFORGE_SM90_FIXUP_PROBE=1: no fix-up, C wrong by design) in each state. What the states separate: a kernel
# bound by DRAM (its misses) runs faster warm; one bound inside the SM or by the L2's hits runs alike in all three.
#   bench/sweeps/l2-states.sh OUTDIR [SHAPE...]
# Writes OUTDIR/states.csv (label, probe, then the bench's CSV columns) and OUTDIR/run.log. ROUNDS (default 1).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
source scripts/lib/bench_rows.sh
out=${1:?usage: l2-states.sh OUTDIR [SHAPE...]}
shift
shapes=("$@")
((${#shapes[@]})) || shapes=(512x512x8192 256x256x16384 1000x1000x1000 128x4096x14336 16x4096x4096 4096x4096x4096)
mkdir -p "$out"
log="$out/run.log"
: >"$log" && : >"$out/states.csv"
export TILEFORGE_DB=/tmp/tileforge-l2-states/no-db/tune.db
for ((r = 1; r <= ${ROUNDS:-1}; ++r)); do
  for shape in "${shapes[@]}"; do
    probes=(0)
    # The main loop alone where dispatch splits K (the probe changes nothing elsewhere).
    build/tileforge plan --no-db --device cuda --shape "$shape" --dtype f16 -q 2>/dev/null | head -1 |
      grep -q "SPLIT_K=[2-9]\|SPLIT_K=1[0-9]" && probes+=(1)
    for state in write read warm; do
      for probe in "${probes[@]}"; do
        TILEFORGE_SCRUB=$([[ $state == write ]] || echo "$state") \
          bench_probe "$out/states.csv" "$log" "$probe" "$shape/$state/r$r" build/tileforge "$shape"
        echo "$shape $state probe $probe round $r rc=$?" >>"$log"
      done
    done
  done
done
