#!/usr/bin/env python3
"""scripts/gpu-check's summary of a GPU run: the public suite's ratios to cuBLAS over its bench processes (median,
min, max), the comparison family's run beside them, cuBLAS's kernels, the layouts and BF16 rows, the device
bandwidth and the skinny rows judged by bytes, and last issue 13's acceptance bars against what was measured.

  bench/tools/gpu_check_summary.py OUTDIR [EXTRADIR] [COMPARE]

OUTDIR holds the first process's bench-public.json (and bench-layouts.json where run). EXTRADIR holds the other
reports (bench-public-N.json, bench-public-COMPARE.json, bench-bf16.json); they are gathered into
OUTDIR/bench-extra.json, the one file the results folder keeps. Without EXTRADIR (or where it does not exist) the
reports are read back from OUTDIR/bench-extra.json: a committed results folder is summarized again as it was.
COMPARE: the family of the comparison run (sm80 by default in scripts/gpu-check; empty: none).
"""
import json
import math
import os
import statistics
import sys

out = sys.argv[1]
extra = sys.argv[2] if len(sys.argv) > 2 else ""
compare = sys.argv[3] if len(sys.argv) > 3 else ""
reports = {}
if extra and os.path.isdir(extra):
    for f in sorted(os.listdir(extra)):
        if f.endswith(".json"):
            reports[f] = json.load(open(os.path.join(extra, f)))
    json.dump(reports, open(os.path.join(out, "bench-extra.json"), "w"), indent=1)
elif os.path.exists(os.path.join(out, "bench-extra.json")):
    reports = json.load(open(os.path.join(out, "bench-extra.json")))
def rows(d):
    return {("x".join(map(str, r["shape"])), r["layout"], r["dtype"]): r for r in d["rows"]}
# The public suite's bench processes: the first in OUTDIR, the others numbered among the extra reports.
first = os.path.join(out, "bench-public.json")
public = [json.load(open(first))] if os.path.exists(first) else []
public += [d for f, d in reports.items() if f.startswith("bench-public-") and f[13:-5].isdigit()]
runs = [rows(d) for d in public]
base = rows(reports[f"bench-public-{compare}.json"]) if compare and f"bench-public-{compare}.json" in reports else {}
def cfg(r):
    c = r["config"]
    return c.get("family", "?") + " " + " ".join(f"{k}={v}" for k, v in c.items() if k != "family")
need = {"4096x4096x4096": 0.95, "2048x2048x2048": 0.9, "5120x5120x5120": 0.9, "8192x8192x8192": 0.9,
        "2048x14336x4096": 0.9, "8192x1024x8192": 0.9, "16384x16384x1024": 0.9}
# Each RR f16 shape's median ratio, and the shapes more than 3% slower than the comparison run: the main table's, which
# issue 13's acceptance block at the end judges.
SLOWER_THAN_BASE = 1.03
medians, slower = {}, []
print(f"public suite RR f16: {len(runs)} bench processes; ratio = cuBLAS time / ours (median over processes)")
print(f"{'shape':>18} {'ours TF':>8} {'cublas':>8} {'ratio':>6} {'min':>6} {'max':>6} {'lt peer':>7} {'need':>5} {'vs ' + (compare or '-'):>9}  config")
if runs:
    for key in runs[0]:
        rs = [run[key] for run in runs if key in run]
        ratios = [r["ratio"] for r in rs if r.get("ratio")]
        med = statistics.median(ratios) if ratios else None
        if med is not None and key[1] == "RR" and key[2] == "f16":
            medians[key[0]] = med
        ours = statistics.median([r["tflops"] for r in rs])
        nat = [r["native"]["tflops"] for r in rs if r["native"].get("tflops")]
        peers = [p["tflops"] for r in rs for p in r["peers"] if p["backend"] == "cublaslt"]
        lt = (ours / statistics.median(peers)) if peers else None
        n = need.get(key[0])
        flag = "" if n is None or (med is not None and med >= n) else " SHORT"
        vs = ""
        if key in base and base[key].get("median_ms") and rs[0].get("median_ms"):
            ms = statistics.median([r["median_ms"] for r in rs])
            vs = f"{base[key]['median_ms'] / ms:.3f}"
            if ms > SLOWER_THAN_BASE * base[key]["median_ms"]:
                vs += " SLOWER"
                slower.append(f"{key[0]} ({base[key]['median_ms'] / ms:.3f})")
        fb = " FALLBACK" if any(r["fallback"] for r in rs) else ""
        bad = " FAIL" if any(not r.get("verified", True) or r.get("rel_error", 0) > r.get("threshold", 1) for r in rs) else ""
        print(f"{key[0]:>18} {ours:8.1f} {statistics.median(nat) if nat else 0:8.1f} "
              f"{med if med is not None else 0:6.3f} {min(ratios) if ratios else 0:6.3f} {max(ratios) if ratios else 0:6.3f} "
              f"{lt if lt else 0:7.3f} {n if n else '':>5} {vs:>9}  {cfg(rs[0])}{flag}{fb}{bad}")
# Issue 17: what cuBLAS ran for each shape (the native row's kernel, as CUPTI named it on the first process's
# verification call), and cuBLASLt's pick beside it.
if runs:
    print("\ncuBLAS's kernel per shape (first process; tile, BLOCK_K, stages and cluster as the name says them)")
    for key, r in runs[0].items():
        nat = r["native"].get("kernel") or "-"
        lt = [p.get("kernel") or "-" for p in r["peers"] if p["backend"] == "cublaslt"]
        print(f"{key[0]:>18}  cublas: {nat}")
        if lt:
            print(f"{'':>18}  cublaslt: {lt[0]}")
    notes = sorted({w for r in runs[0].values() for w in (r.get("warnings") or []) if "kernel name not captured" in w})
    for w in notes[:3]:
        print(f"  note: {w}")
for name in ["bench-layouts.json"]:
    p = os.path.join(out, name)
    if os.path.exists(p):
        print(f"\n{name}: 4096^3 f16 per layout (need 0.9 in RC, CR, CC)")
        for r in json.load(open(p))["rows"]:
            print(f"  {r['layout']} {r['dtype']} ours {r['tflops']:.1f} cublas {r['native'].get('tflops', 0):.1f} ratio {r['ratio'] or 0:.3f} err {r['rel_error']:.2e}  {cfg(r)}")
if "bench-bf16.json" in reports:
    print("\nbf16 RR 4096^3 (need 0.9):")
    for r in reports["bench-bf16.json"]["rows"]:
        print(f"  {r['layout']} {r['dtype']} ours {r['tflops']:.1f} cublas {r['native'].get('tflops', 0):.1f} ratio {r['ratio'] or 0:.3f} err {r['rel_error']:.2e}  {cfg(r)}")
# Issue 13: the device bandwidth each public-suite process measured (a copy of twice the L2, read and write counted),
# and the skinny rows (M or N at most 64: bound by memory) judged by bytes, medians over the processes.
envs = [d["environment"] for d in public]
bws = [e["device_bandwidth"] for e in envs if e.get("device_bandwidth")]
if bws:
    each = ", ".join(f"{x['gbps']:.1f}" for x in bws)
    print(f"\ndevice bandwidth: {statistics.median([x['gbps'] for x in bws]):.1f} GB/s, median of {len(bws)} processes "
          f"({each}); each a copy of {bws[0]['bytes'] >> 20} MiB, read and write counted, the median of its reps")
else:
    why = [e["device_bandwidth_missing"] for e in envs if e.get("device_bandwidth_missing")]
    print("\ndevice bandwidth: not measured" + (f" ({why[0]})" if why else ""))
def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
def num(v, spec):
    return format(v, spec) if v is not None else "-"
def pct(v):
    return f"{100 * v:.1f}%" if v is not None else "-"
if runs:
    print("skinny rows (M or N <= 64), RR f16: GB/s = A, B and C moved once / median time; of bw = that / the device bandwidth")
    print(f"{'shape':>18} {'ours GB/s':>9} {'of bw':>6} {'cublas GB/s':>11} {'of bw':>6}")
    for key in runs[0]:
        m, n = (int(v) for v in key[0].split("x")[:2])
        if m > 64 and n > 64:
            continue
        rs = [run[key] for run in runs if key in run]
        ours_g, ours_f = med([r.get("gbps") for r in rs]), med([r.get("bandwidth_fraction") for r in rs])
        nat_g = med([r["native"].get("gbps") for r in rs])
        nat_f = med([r["native"].get("bandwidth_fraction") for r in rs])
        print(f"{key[0]:>18} {num(ours_g, '.1f'):>9} {pct(ours_f):>6} {num(nat_g, '.1f'):>11} {pct(nat_f):>6}")

# Issue 13's acceptance bars (FP16 RR, dispatch's configs, each ratio the median of the processes), what was measured
# against each, and the comparison family's run ("no shape slower than the previous dispatch's config by more than
# 3%"). A bar this run cannot judge (a shape missing, no bandwidth, no comparison run) says so.
ISSUE13_BARS = [("16x4096x4096", 1.6), ("64x14336x4096", 1.2), ("128x4096x14336", 1.1), ("512x512x8192", 1.3),
                ("256x256x16384", 1.3), ("4096x4096x512", 1.0), ("3000x3000x3000", 0.95), ("1000x1000x1000", 1.1),
                ("4095x4097x4093", 3.0)]
ISSUE13_GEOMEAN, ISSUE13_BANDWIDTH = 1.1, 0.70
if runs:
    def verdict(ok):
        return "met" if ok else "SHORT"
    print("\nissue 13 acceptance (FP16 RR, dispatch's configs; ratio = cuBLAS time / ours, median over processes)")
    for shape, bar in ISSUE13_BARS:
        ratio = medians.get(shape)
        if ratio is None:
            print(f"{shape:>18}  need {bar:.2f}x: not in this run")
            continue
        line = f"{shape:>18}  ratio {ratio:.3f}  need {bar:.2f}x  {verdict(ratio >= bar)}"
        if shape == "16x4096x4096":
            frac = med([run[k].get("bandwidth_fraction") for run in runs for k in run if k[0] == shape and k[1:] == ("RR", "f16")])
            line += (f"; {pct(frac)} of the device bandwidth, need {ISSUE13_BANDWIDTH:.0%}  "
                     f"{verdict(frac >= ISSUE13_BANDWIDTH)}" if frac is not None else "; bandwidth not measured")
        print(line)
    if medians:
        gm = math.exp(sum(math.log(x) for x in medians.values()) / len(medians))
        print(f"{'geometric mean':>18}  {gm:.3f} over {len(medians)} shapes  need {ISSUE13_GEOMEAN:.2f}x  "
              f"{verdict(gm >= ISSUE13_GEOMEAN)}")
    if base:
        print(f"{'vs ' + compare:>18}  no shape more than 3% slower than its dispatch config: "
              + ("met" if not slower else "SHORT: " + ", ".join(slower)))
    else:
        print(f"{'vs previous':>18}  not judged: no comparison run in this folder (COMPARE_FAMILY empty)")
