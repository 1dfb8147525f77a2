#!/usr/bin/env bash
# Per-kernel durations and memory traffic of ours and cuBLAS's GEMMs under Nsight Compute (hardware counters, caches
# flushed before each kernel, clocks left alone), one bench process per shape: where a call's time goes inside the
# kernels, apart from the launch and event overhead that the benchmark contract's times include.
#   bench/sweeps/ncu-kernels.sh OUTDIR SHAPE...      e.g. bench/sweeps/ncu-kernels.sh out 1000x1000x1000 512x512x8192
# Writes OUTDIR/ncu-SHAPE.csv (ncu's raw CSV) and OUTDIR/ncu-summary.txt (kernel, duration, DRAM and L2 bytes).
# BENCH_ARGS (optional): more arguments for the bench, e.g. "--set COPY_AB=0"; LABEL then names the files
# (ncu-SHAPE-LABEL.csv) so that runs of one shape with other pins sit side by side.
# NCU_SET (optional): a section set collected besides the metrics (e.g. "full": every counter of the memory workload
# tables, for a per-source breakdown of the L2 traffic), LAUNCHES the kernels profiled per shape (default 12).
set -euo pipefail
out=${1:?usage: ncu-kernels.sh OUTDIR SHAPE...}
shift
mkdir -p "$out"
ncu=${NCU:-ncu}
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_requests.sum
metrics+=,lts__t_sectors.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size
metrics+=,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed
# Ours (sm90, sm80, the skinny family, the operand copy) and cuBLAS's (nvjet, CUTLASS, the split-K reduction); not
# the timer's L2 scrub nor the reference and check kernels.
kernels='regex:^(sm90_gemm|sm80_gemm|skinny|tf_copy|nvjet|.*splitKreduce|.*cutlass|.*Kernel2)'
label=${LABEL:+-$LABEL}
read -r -a extra <<<"${BENCH_ARGS:-}"
sets=()
[[ -n "${NCU_SET:-}" ]] && sets=(--set "$NCU_SET")
for shape in "$@"; do
  "$ncu" --clock-control none --csv --page raw "${sets[@]}" --metrics "$metrics" -k "$kernels" \
    --launch-count "${LAUNCHES:-12}" \
    build/tileforge bench --device cuda --shape "$shape" --dtype f16 --no-db --min-reps 3 "${extra[@]}" \
    >"$out/ncu-$shape$label.csv" 2>"$out/ncu-$shape$label.log" ||
    echo "ncu-kernels: $shape failed (see ncu-$shape$label.log)" >&2
done
python3 - "$out" "$label" "$@" >"$out/ncu-summary$label.txt" <<'EOF'
import csv, io, sys
out, label = sys.argv[1], sys.argv[2]
print(f"{'shape':>16}  {'kernel':<60} {'grid':>6} {'us':>8} {'DRAM rd MB':>10} {'DRAM wr MB':>10} {'L2 MB':>8} "
      f"{'L2 req k':>9} {'sect k':>9} {'SM %':>6} {'gmma %':>6}")
for shape in sys.argv[3:]:
    try:
        text = open(f"{out}/ncu-{shape}{label}.csv").read()
    except OSError:
        continue
    lines = [l for l in text.splitlines() if l.startswith('"')]
    if len(lines) < 3:
        continue
    rows = list(csv.DictReader(io.StringIO("\n".join([lines[0]] + lines[2:]))))
    for r in rows:
        def num(key, scale=1.0):
            try:
                return float(r.get(key, "nan").replace(",", "")) * scale
            except ValueError:
                return float("nan")
        print(f"{shape:>16}  {r.get('Kernel Name', '?')[:60]:<60} {num('launch__grid_size'):>6.0f} "
              f"{num('gpu__time_duration.sum', 1e-3):>8.2f} {num('dram__bytes_read.sum', 1e-6):>10.1f} "
              f"{num('dram__bytes_write.sum', 1e-6):>10.1f} {num('lts__t_bytes.sum', 1e-6):>8.1f} "
              f"{num('lts__t_requests.sum', 1e-3):>9.1f} {num('lts__t_sectors.sum', 1e-3):>9.1f} "
              f"{num('sm__throughput.avg.pct_of_peak_sustained_elapsed'):>6.1f} "
              f"{num('sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed'):>6.1f}")
EOF
cat "$out/ncu-summary$label.txt"
