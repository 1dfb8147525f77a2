#!/usr/bin/env python3
"""Prints a gpu-splitk-sweep CSV (scripts/gpu-splitk-sweep's sweep.csv) as a short table: label, ours and cuBLAS
median microseconds, ratio (cuBLAS / ours), verified. Used in device calls to see a sweep's outcome in the reply.
With --rounds, the CSVs are runs of one sweep file: per label (in first-seen order) each round's time, the median
over the rounds of ours and of cuBLAS, ours against the median of its shape's dispatch row ("vs dispatch", below 1:
faster than dispatch's own config) and whether every round verified. A row where a vendor call stood in for ours
(fallback) is not ours: it shows as "-" and no median counts it, as in ab-summary.py.

  bench/sweeps/sweep-table.py SWEEP.csv...
  bench/sweeps/sweep-table.py --rounds ROUND1.csv ROUND2.csv...
"""
import csv
import statistics
import sys


def us(row, key):
    return float(row[key]) * 1e3 if row.get(key) else float("nan")


def rows_of(path):
    with open(path, newline="") as f:
        yield from csv.DictReader(f)


def table(paths):
    for path in paths:
        for row in rows_of(path):
            ratio, verified = row.get("ratio", ""), row.get("verified", "")
            print(f"{row['label'][:78]:78s} {us(row, 'median_ms'):8.2f} {us(row, 'native_median_ms'):8.2f} "
                  f"{ratio:>7s} {verified}")


def fell_back(row):
    return row.get("fallback", "false").lower() not in ("0", "false", "")


def rounds(paths):
    runs = {}  # label -> {round index: row}, rows of ours only
    for i, path in enumerate(paths):
        for row in rows_of(path):
            runs.setdefault(row["label"], {})
            if not fell_back(row):
                runs[row["label"]][i] = row

    def median_of(label, key):
        got = [us(r, key) for r in runs.get(label, {}).values()]
        return statistics.median(got) if got else float("nan")

    print(f"{'label':78s} " + " ".join(f"{'r' + str(i + 1):>8s}" for i in range(len(paths))) +
          "   median   cuBLAS  vs dispatch  verified")
    for label, by_round in runs.items():
        each = " ".join(f"{us(by_round[i], 'median_ms'):8.2f}" if i in by_round else f"{'-':>8s}"
                        for i in range(len(paths)))
        ours = median_of(label, "median_ms")
        base = median_of(label.split("/")[0] + "/dispatch", "median_ms")
        verified = bool(by_round) and all(r.get("verified") == "true" for r in by_round.values())
        print(f"{label[:78]:78s} {each} {ours:8.2f} {median_of(label, 'native_median_ms'):8.2f} "
              f"{ours / base:12.4f}  {str(verified).lower()}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rounds"]:
        rounds(sys.argv[2:])
    else:
        table(sys.argv[1:])
