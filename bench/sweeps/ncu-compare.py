#!/usr/bin/env python3
"""Side by side, the counters of kernels that Nsight Compute profiled (ncu --csv --page raw, as
bench/sweeps/ncu-kernels.sh writes them): for each metric whose name matches the pattern, its value in each chosen
kernel and each kernel's ratio to the first, the metrics that differ most first. Made to find where one kernel
moves more through a cache level than another of the same tile (e.g. NCU_SET=full, then
`ncu-compare.py out/ncu-1000x1000x1000.csv --kernels sm90_gemm,nvjet --pattern '^lts__t_(sectors|requests)'`).

  ncu-compare.py CSV [CSV...] [--kernels SUBSTR,SUBSTR,...] [--pattern REGEX] [--top N]
  ncu-compare.py --summary CSV [CSV...]

--summary prints one line per profiled kernel instead: its grid, duration, DRAM and L2 traffic, SM and wgmma
utilisation (the table ncu-kernels.sh writes as ncu-summary.txt), the shape taken from the file's name
(ncu-SHAPE[-LABEL].csv).

--kernels picks, in order, the first profiled kernel whose name contains each substring (default: the first two
distinct kernel names); CSVs are read in order, so a variant's file can follow the base's.
"""
import argparse
import csv
import gzip
import io
import re
import sys


def read_rows(path):
    """The kernel rows of one raw CSV, or of its gzip (its first line the names, its second the units)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        lines = [line for line in f.read().splitlines() if line.startswith('"')]
    if len(lines) < 3:
        return []
    return list(csv.DictReader(io.StringIO("\n".join([lines[0]] + lines[2:]))))


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


SUMMARY = [  # (metric, heading, scale, width, decimals)
    ("launch__grid_size", "grid", 1.0, 6, 0),
    ("gpu__time_duration.sum", "us", 1e-3, 8, 2),
    ("dram__bytes_read.sum", "DRAM rd MB", 1e-6, 10, 1),
    ("dram__bytes_write.sum", "DRAM wr MB", 1e-6, 10, 1),
    ("lts__t_bytes.sum", "L2 MB", 1e-6, 8, 1),
    ("lts__t_requests.sum", "L2 req k", 1e-3, 9, 1),
    ("lts__t_sectors.sum", "sect k", 1e-3, 9, 1),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %", 1.0, 6, 1),
    ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed", "gmma %", 1.0, 6, 1),
]


def summary(paths):
    """One line per profiled kernel of each file: the columns of SUMMARY."""
    print(f"{'shape':>16}  {'kernel':<60} " + " ".join(f"{h:>{w}}" for _, h, _, w, _ in SUMMARY))
    for path in paths:
        shape = re.sub(r"^ncu-|\.csv(\.gz)?$", "", path.rsplit("/", 1)[-1])
        for r in read_rows(path):
            cells = []
            for metric, _, scale, width, decimals in SUMMARY:
                v = number(r.get(metric, "nan"))
                cells.append(f"{(v * scale if v is not None else float('nan')):>{width}.{decimals}f}")
            print(f"{shape:>16}  {r.get('Kernel Name', '?')[:60]:<60} " + " ".join(cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--summary", action="store_true", help="one line per kernel: time, traffic, utilisation")
    ap.add_argument("--kernels", default="", help="comma-separated substrings of the kernel names, in order")
    ap.add_argument("--pattern", default=r"^(lts__|dram__|l1tex__m_|gpu__time)", help="metric names to show (regex)")
    ap.add_argument("--top", type=int, default=60, help="rows to print")
    args = ap.parse_args()
    if args.summary:
        summary(args.csv)
        return

    rows = []
    for path in args.csv:
        rows += [(path, r) for r in read_rows(path)]
    if not rows:
        sys.exit("ncu-compare: no kernel rows in " + ", ".join(args.csv))
    chosen = []
    if args.kernels:
        for want in args.kernels.split(","):
            hit = next((pr for pr in rows if want in pr[1].get("Kernel Name", "") and pr not in chosen), None)
            if hit is None:
                sys.exit(f"ncu-compare: no kernel whose name contains '{want}'")
            chosen.append(hit)
    else:
        seen = set()
        for pr in rows:
            name = pr[1].get("Kernel Name", "")
            if name not in seen:
                seen.add(name)
                chosen.append(pr)
            if len(chosen) == 2:
                break
    pattern = re.compile(args.pattern)
    metrics = [m for m in chosen[0][1].keys() if pattern.search(m)]
    table = []
    for m in metrics:
        values = [number(r.get(m)) for _, r in chosen]
        if values[0] is None or any(v is None for v in values):
            continue
        spread = max(values) - min(values)
        table.append((spread / (abs(values[0]) + 1e-30), m, values))
    table.sort(key=lambda t: -t[0])
    for i, (path, r) in enumerate(chosen):
        print(f"[{i}] {r.get('Kernel Name', '?')[:90]}  ({path})")
    print(f"{'metric':<72} " + " ".join(f"{'[' + str(i) + ']':>14}" for i in range(len(chosen))) + "  ratios to [0]")
    for _, m, values in table[: args.top]:
        ratios = " ".join(f"{v / values[0]:6.3f}" if values[0] else "     -" for v in values[1:])
        print(f"{m:<72} " + " ".join(f"{v:>14.4g}" for v in values) + "  " + ratios)


if __name__ == "__main__":
    main()
