#!/usr/bin/env python3
"""Prints a gpu-splitk-sweep CSV (scripts/gpu-splitk-sweep's sweep.csv) as a short table: label, ours and cuBLAS
median microseconds, ratio (cuBLAS / ours), verified. Used in device calls to see a sweep's outcome in the reply.

  bench/sweeps/sweep-table.py SWEEP.csv...
"""
import csv
import sys

for path in sys.argv[1:]:
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            ours = float(row["median_ms"]) * 1e3 if row.get("median_ms") else float("nan")
            native = float(row["native_median_ms"]) * 1e3 if row.get("native_median_ms") else float("nan")
            ratio, verified = row.get("ratio", ""), row.get("verified", "")
            print(f"{row['label'][:78]:78s} {ours:8.2f} {native:8.2f} {ratio:>7s} {verified}")
