#!/bin/bash
# CPU tune against a fresh exhaustive search of the same space, per shape of bench/suites/cpu.json, then the
# exhaustive search's three fastest and tune's pick re-measured side by side (tune --ranks, ranks looked up by
# config under today's planner). Run on an otherwise idle machine: OUT=<dir> bash commands.sh
cd "$(git rev-parse --show-toplevel)"
tf=build/tileforge; o=${OUT:-out}
export OPENBLAS_THREAD_TIMEOUT=4
uptime > $o/uptime.txt
for s in 16x4096x4096 1024x1024x1024 2048x2048x2048 4096x4096x4096; do
  n=${s//x/-}
  $tf tune --device cpu --shape $s --no-db --format json --out $o/tune-$n.json --quiet > /dev/null 2>&1
  $tf tune --device cpu --shape $s --no-db --exhaustive --format json --out $o/exhaustive-$n.json --quiet > /dev/null 2>&1
  r=$(python3 bench/tools/tune_compare.py ranks $o/exhaustive-$n.json $o/tune-$n.json)
  $tf tune --device cpu --shape $s --no-db --ranks $r --format json --out $o/remeasure-$n.json --quiet > /dev/null 2>&1
  python3 bench/tools/tune_compare.py versus $o/remeasure-$n.json $o/exhaustive-$n.json $o/tune-$n.json >> $o/versus.md
  uptime >> $o/uptime.txt
done
python3 bench/tools/tune_compare.py summary $o/tune-*.json > $o/summary.md
echo done > $o/done
# Afterwards, 4096^3 re-measured side by side with 30 reps each instead of the 11 that the 10 s cap allowed
# (the first re-measure's difference, 2.3%, was inside its medians' 2.5% uncertainty):
#   r=$(python3 bench/tools/tune_compare.py ranks $o/exhaustive-4096-4096-4096.json.gz $o/tune-4096-4096-4096.json)
#   build/tileforge tune --device cpu --shape 4096x4096x4096 --no-db --ranks $r --max-time 40 --format json \
#     --out $o/remeasure-4096-4096-4096-long.json --quiet
