o=$OUT/emr2-skinny; mkdir -p $o; export TILEFORGE_DB=/tmp/tf-tune.db; tf="taskset -c 0,1 build/tileforge"
$tf tune --device cpu --shape 16x4096x4096 --no-db --exhaustive --screen-reps 5 --format json --out $o/exhaustive-16-4096-4096.json --quiet > $o/exhaustive-16-4096-4096.txt 2>&1
best=$(python3 -c "
import json; d=json.load(open('$o/exhaustive-16-4096-4096.json'))['results'][0]
c=min((c for c in d['candidates'] if (c.get('screen') or {}).get('reps')), key=lambda c: c['screen']['median_ms'])
print(' '.join(f'--set {k}={v}' for k,v in c['config'].items() if k!='family'))")
echo "fastest screened: $best" | tee $o/skinny.log
gzip $o/exhaustive-16-4096-4096.json
for i in 1 2 3; do $tf bench --device cpu --shape 16x4096x4096 --dtype f32 --quiet --format json --out $o/planner-$i.json >/dev/null 2>&1; $tf bench --device cpu --shape 16x4096x4096 --dtype f32 $best --quiet --format json --out $o/pinned-$i.json > /dev/null 2>&1; done
for f in $o/planner-*.json $o/pinned-*.json; do python3 -c "
import json; r=json.load(open('$f'))['rows'][0]; print('$f'.split('/')[-1], r['config'], round(r['tflops']*1e3,1), round(r['native']['tflops']*1e3,1), round(r['ratio'],3))"; done | tee -a $o/skinny.log
