#!/usr/bin/env python3
"""The summary of bench/sweeps/ab-builds.sh: per shape, the median over the rounds of our time and of the ratio to
the native library, for the old and the new build side by side (rows that fell back to the vendor left out).

    bench/sweeps/ab-summary.py AB_CSV
"""
import csv
import statistics
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ab-summary.py AB_CSV")
    by = {}
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            if r.get("fallback", "false").lower() not in ("0", "false", ""):
                continue  # a vendor call standing in for ours is not ours
            key = (f'{r["m"]}x{r["n"]}x{r["k"]}', r["build"])
            by.setdefault(key, []).append((float(r["median_ms"]) * 1e3, float(r["ratio"])))
    print(f'{"shape":>16} {"old us":>8} {"new us":>8} {"new/old":>8} {"old ratio":>10} {"new ratio":>10}')
    for shape in dict.fromkeys(k[0] for k in by):
        old, new = by.get((shape, "old"), []), by.get((shape, "new"), [])
        if not old or not new:
            print(f"{shape:>16} missing rows of the {'old' if not old else 'new'} build")
            continue
        ou, nu = statistics.median(x[0] for x in old), statistics.median(x[0] for x in new)
        orat, nrat = statistics.median(x[1] for x in old), statistics.median(x[1] for x in new)
        print(f"{shape:>16} {ou:8.2f} {nu:8.2f} {nu / ou:8.3f} {orat:10.3f} {nrat:10.3f}")


if __name__ == "__main__":
    main()
