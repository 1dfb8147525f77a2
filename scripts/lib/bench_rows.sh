# One bench process of a GPU sweep (scripts/gpu-splitk-sweep, bench/sweeps/ab-builds.sh): SHAPE in f16 on the CUDA
# device with no tuning DB and the sweeps' repetitions, ARGS after (a repeated option, e.g. --dtype bf16, takes the
# last value); its CSV rows appended to CSV, each after PREFIX, and the header once ("COLUMNS,<the bench's header>");
# the bench's stderr to LOG. Returns the bench's exit status.
#   source scripts/lib/bench_rows.sh; bench_rows CSV LOG COLUMNS PREFIX TILEFORGE SHAPE [ARGS...]
bench_rows() {
  local csv=$1 log=$2 columns=$3 prefix=$4 tf=$5 shape=$6 rows rc
  shift 6
  rows=$(timeout 60 "$tf" bench --device cuda --shape "$shape" --dtype f16 --no-db --min-reps 20 --min-time 0.05 \
           --max-time 0.3 --format csv -q "$@" 2>>"$log")
  rc=$?
  [[ -s $csv ]] || echo "$columns,$(head -1 <<<"$rows")" >"$csv"
  tail -n +2 <<<"$rows" | sed "s|^|$prefix,|" >>"$csv"
  return "$rc"
}

# One bench_rows row of the sm90 fix-up sweeps: TILEFORGE_SM90_FIXUP_PROBE=PROBE (sm90/fixup.cuh; 0 is the kernel) and
# each NAME=VALUE pinned with --set, the row prefixed "LABEL,PROBE" under the columns "label,probe".
#   bench_probe CSV LOG PROBE LABEL TILEFORGE SHAPE [NAME=VALUE...]
bench_probe() {
  local csv=$1 log=$2 probe=$3 label=$4 tf=$5 shape=$6 pins=() p
  shift 6
  for p in "$@"; do pins+=(--set "$p"); done
  TILEFORGE_SM90_FIXUP_PROBE=$probe bench_rows "$csv" "$log" "label,probe" "$label,$probe" "$tf" "$shape" "${pins[@]}"
}
