#!/usr/bin/env bash
# A/B of two builds of tileforge on the same shapes, on one GPU: for each round and shape, one bench process of each
# build (their order alternating by round), dispatch's config (no tuning DB), cuBLAS in the same process. A kernel
# change that the cost model does not see (the same configs, other machine code) is measured this way, the old
# build carried beside the new one.
#   bench/sweeps/ab-builds.sh OUTDIR OLD_TILEFORGE NEW_TILEFORGE SHAPE...
# Writes OUTDIR/ab.csv (build, round, then the bench's CSV columns) and OUTDIR/ab-summary.txt (per shape and build:
# the median over the rounds of our time and of the ratio to cuBLAS). ROUNDS (default 3), BENCH_ARGS (more bench
# arguments, e.g. "--set STAGES=6").
set -uo pipefail
out=${1:?usage: ab-builds.sh OUTDIR OLD NEW SHAPE...}
old=${2:?the old build of tileforge}
new=${3:?the new build of tileforge}
shift 3
mkdir -p "$out"
csv="$out/ab.csv"
: >"$csv"
read -r -a extra <<<"${BENCH_ARGS:-}"
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/bench_rows.sh"
one() {  # one BUILD_LABEL TILEFORGE ROUND SHAPE
  local rc=0
  bench_rows "$csv" "$out/ab.log" build,round "$1,$3" "$2" "$4" "${extra[@]}" || rc=$?
  echo "$1 $4 round $3 rc=$rc" >>"$out/ab.log"
}
for ((r = 1; r <= ${ROUNDS:-3}; ++r)); do
  for s in "$@"; do
    if ((r % 2)); then one old "$old" "$r" "$s"; one new "$new" "$r" "$s"; else one new "$new" "$r" "$s"; one old "$old" "$r" "$s"; fi
  done
done
python3 "$(dirname "${BASH_SOURCE[0]}")/ab-summary.py" "$csv" >"$out/ab-summary.txt"
cat "$out/ab-summary.txt"
