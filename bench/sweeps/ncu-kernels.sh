#!/usr/bin/env bash
# Per-kernel durations and memory traffic of ours and cuBLAS's GEMMs under Nsight Compute (hardware counters, caches
# flushed before each kernel, clocks left alone), one bench process per shape: where a call's time goes inside the
# kernels, apart from the launch and event overhead that the benchmark contract's times include.
#   bench/sweeps/ncu-kernels.sh OUTDIR SHAPE...      e.g. bench/sweeps/ncu-kernels.sh out 1000x1000x1000 512x512x8192
# Writes OUTDIR/ncu-SHAPE.csv (ncu's raw CSV) and OUTDIR/ncu-summary.txt (kernel, duration, DRAM and L2 bytes).
# BENCH_ARGS (optional): more arguments for the bench, e.g. "--set COPY_AB=0"; LABEL then names the files
# (ncu-SHAPE-LABEL.csv) so that runs of one shape with other pins sit side by side.
# EXTRA_METRICS (optional): more metrics, comma-separated (e.g. the L2's cross-partition requests,
# lts__t_requests_srcunit_ltcfabric.sum), for ncu-compare.py to lay side by side.
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
metrics+=${EXTRA_METRICS:+,$EXTRA_METRICS}
# Ours (sm90, sm80, the skinny family, the operand copy) and cuBLAS's (nvjet, CUTLASS, the split-K reduction); not
# the timer's L2 scrub nor the reference and check kernels.
kernels='regex:^(sm90_gemm|sm80_gemm|skinny|tf_copy|nvjet|.*splitKreduce|.*cutlass|.*Kernel2)'
label=${LABEL:+-$LABEL}
read -r -a extra <<<"${BENCH_ARGS:-}"
sets=()
[[ -n "${NCU_SET:-}" ]] && sets=(--set "$NCU_SET")
status=0  # 1 when a shape's bench failed under the profiler (the others are still summarized)
for shape in "$@"; do
  "$ncu" --clock-control none --csv --page raw "${sets[@]}" --metrics "$metrics" -k "$kernels" \
    --launch-count "${LAUNCHES:-12}" \
    build/tileforge bench --device cuda --shape "$shape" --dtype f16 --no-db --min-reps 3 "${extra[@]}" \
    >"$out/ncu-$shape$label.csv" 2>"$out/ncu-$shape$label.log" || {
    echo "ncu-kernels: $shape failed (see ncu-$shape$label.log)" >&2
    # A split-K kernel in clusters whose shared sum is launched cooperatively cannot be replayed by the profiler
    # (2026-12-06: LaunchFailed with every build); the same kernel launched uncooperatively profiles.
    if grep -q "LaunchFailed" "$out/ncu-$shape$label.csv" 2>/dev/null; then
      echo "ncu-kernels: $shape: the launch failed under the profiler; a cooperative launch in clusters (split-K's" \
           "shared sum) is not replayed: TILEFORGE_SM90_SHARED_SUM=uncooperative profiles the same kernel" >&2
    fi
    status=1
  }
done
files=()
for shape in "$@"; do
  [[ -f "$out/ncu-$shape$label.csv" ]] && files+=("$out/ncu-$shape$label.csv")
done
if ((${#files[@]})); then
  python3 "$(dirname "${BASH_SOURCE[0]}")/ncu-compare.py" --summary "${files[@]}" >"$out/ncu-summary$label.txt"
else
  echo "ncu-kernels: no profile was written" >"$out/ncu-summary$label.txt"
fi
cat "$out/ncu-summary$label.txt"
exit "$status"
