#!/bin/bash
# CPU tune with the cost model that charges B's DRAM rows at a per-core rate, against run 5's exhaustive searches
# of the same space (kept in ../run5): tune per shape of bench/suites/cpu.json, then run 5's three fastest and
# tune's pick re-measured side by side (tune --ranks, ranks looked up by config under today's planner).
# Run on an otherwise idle machine: OUT=<dir> bash commands.sh
cd "$(git rev-parse --show-toplevel)"
tf=build/tileforge; o=${OUT:-out}; kept=bench/results/cpu-amd-epyc-zen3/2026-11-29-tune/run5
export OPENBLAS_THREAD_TIMEOUT=4
uptime > $o/uptime.txt
for s in 16x4096x4096 1024x1024x1024 2048x2048x2048 4096x4096x4096; do
  n=${s//x/-}
  $tf tune --device cpu --shape $s --no-db --format json --out $o/tune-$n.json --quiet > /dev/null 2>&1
  r=$(python3 bench/tools/tune_compare.py ranks $kept/exhaustive-$n.json.gz $o/tune-$n.json)
  $tf tune --device cpu --shape $s --no-db --ranks $r --max-time 40 --format json --out $o/remeasure-$n.json --quiet > /dev/null 2>&1
  python3 bench/tools/tune_compare.py versus $o/remeasure-$n.json $kept/exhaustive-$n.json.gz $o/tune-$n.json >> $o/versus.md
  uptime >> $o/uptime.txt
done
python3 bench/tools/tune_compare.py summary $o/tune-*.json > $o/summary.md
echo done > $o/done
# Afterwards, 4096^3 re-measured side by side twice more: with --max-time 80 (still 30 reps: the cap was not
# reached) and with 80 reps each:
#   r=$(python3 bench/tools/tune_compare.py ranks $kept/exhaustive-4096-4096-4096.json.gz $o/tune-4096-4096-4096.json)
#   build/tileforge tune --device cpu --shape 4096x4096x4096 --no-db --ranks $r --max-time 80 --format json \
#     --out $o/remeasure-4096-4096-4096-long.json --quiet
#   build/tileforge tune --device cpu --shape 4096x4096x4096 --no-db --ranks $r --min-reps 80 --max-time 120 \
#     --format json --out $o/remeasure-4096-4096-4096-80reps.json --quiet
