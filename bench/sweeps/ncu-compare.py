#!/usr/bin/env python3
"""Side by side, the counters of kernels that Nsight Compute profiled (ncu --csv --page raw, as
bench/sweeps/ncu-kernels.sh writes them): for each metric whose name matches the pattern, its value in each chosen
kernel and each kernel's ratio to the first, the metrics that differ most first. Made to find where one kernel
moves more through a cache level than another of the same tile (e.g. NCU_SET=full, then
`ncu-compare.py out/ncu-1000x1000x1000.csv --kernels sm90_gemm,nvjet --pattern '^lts__t_(sectors|requests)'`).

  ncu-compare.py CSV [CSV...] [--kernels SUBSTR,SUBSTR,...] [--pattern REGEX] [--top N]

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--kernels", default="", help="comma-separated substrings of the kernel names, in order")
    ap.add_argument("--pattern", default=r"^(lts__|dram__|l1tex__m_|gpu__time)", help="metric names to show (regex)")
    ap.add_argument("--top", type=int, default=60, help="rows to print")
    args = ap.parse_args()

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
