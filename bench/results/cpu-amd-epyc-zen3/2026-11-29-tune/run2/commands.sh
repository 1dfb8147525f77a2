#!/bin/bash
cd "$(git rev-parse --show-toplevel)"
tf=build/tileforge; o=${OUT:-out}; e=bench/results/cpu-amd-epyc-zen3/2026-11-29-tune
export OPENBLAS_THREAD_TIMEOUT=4
uptime > $o/uptime.txt
for s in 1024x1024x1024 16x4096x4096 2048x2048x2048; do
  n=${s//x/-}
  $tf tune --device cpu --shape $s --no-db --format json --out $o/tune-$n.json --quiet > /dev/null 2>&1
  gunzip -c $e/exhaustive-$n.json.gz > $o/exhaustive-$n.json
  r=$(python3 bench/tools/tune_compare.py ranks $o/exhaustive-$n.json $o/tune-$n.json)
  $tf tune --device cpu --shape $s --no-db --ranks $r --format json --out $o/remeasure-$n.json --quiet > /dev/null 2>&1
  python3 bench/tools/tune_compare.py versus $o/remeasure-$n.json $o/exhaustive-$n.json $o/tune-$n.json >> $o/versus.md
  uptime >> $o/uptime.txt
done
$tf tune --device cpu --shape 4096x4096x4096 --no-db --budget 120 --format json --out $o/tune-4096-4096-4096.json --quiet > /dev/null 2>&1
uptime >> $o/uptime.txt
python3 bench/tools/tune_compare.py summary $o/tune-*.json > $o/summary.md
echo done > $o/done
