#!/usr/bin/env bash
# Per-instruction view of ours and cuBLAS's GEMM kernels under Nsight Compute: each SASS instruction with its
# executions and warp-stall samples (the source page of a full-set profile), one bench process per shape. It shows
# where a kernel's warps wait (which barrier, load or fence) and how cuBLAS's kernel issues its copies, which the
# summed counters of ncu-kernels.sh cannot.
#   bench/sweeps/ncu-sass.sh OUTDIR SHAPE...
# Writes OUTDIR/sass-SHAPE-KERNEL.csv (KERNEL: ours or cublas) and OUTDIR/rep-SHAPE.log; the report itself stays in
# OUTDIR/rep-SHAPE.ncu-rep. BENCH_ARGS (optional): more arguments for the bench (e.g. "--set SPLIT_K=2"); LABEL then
# names the files.
set -euo pipefail
out=${1:?usage: ncu-sass.sh OUTDIR SHAPE...}
shift
mkdir -p "$out"
ncu=${NCU:-ncu}
label=${LABEL:+-$LABEL}
read -r -a extra <<<"${BENCH_ARGS:-}"
status=0
for shape in "$@"; do
  rep="$out/rep-$shape$label"
  # The first launch of each: ours (the bench's check runs it first), then cuBLAS's main kernel.
  if ! "$ncu" --clock-control none --set full --import-source yes -k 'regex:^(sm90_gemm|sm80_gemm|skinny|nvjet)' \
      --launch-count 2 -f -o "$rep" build/tileforge bench --device cuda --shape "$shape" --dtype f16 --no-db \
      --min-reps 3 "${extra[@]}" >"$rep.log" 2>&1; then
    echo "ncu-sass: $shape failed (see $rep.log)" >&2
    status=1
    continue
  fi
  "$ncu" -i "$rep.ncu-rep" -k 'regex:^(sm90_gemm|sm80_gemm|skinny)' --page source --csv --print-source sass \
    >"$out/sass-$shape$label-ours.csv" 2>>"$rep.log" || status=1
  "$ncu" -i "$rep.ncu-rep" -k 'regex:^nvjet' --page source --csv --print-source sass \
    >"$out/sass-$shape$label-cublas.csv" 2>>"$rep.log" || status=1
done
exit "$status"
