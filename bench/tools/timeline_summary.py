#!/usr/bin/env python3
"""Where a kernel's time goes, from the sm90 family's timeline diagnostic (TILEFORGE_SM90_TIMELINE; the files that
scripts/gpu-splitk-sweep's "tl" rows write): per file, each phase's time over the CTAs of the launch (median and
largest), in microseconds of the global timer:

  start skew   a CTA's entry after the first CTA's entry (how far apart the grid's CTAs start)
  set-up       entry to the end of the set-up (barriers, tensor-map prefetch, the cluster's meeting)
  first stage  set-up to the first stage landed in the first consumer's ring (the first copy's latency)
  main loop    first stage to the last unit's main loop done (with more units per CTA, the earlier units' fix-ups
               and epilogues too)
  fix-up       the last unit's split-K / stream-K sum (0 without one), and where it goes through the workspace its
               parts: store (the partial tile stored), wait (for every slice of the tile), sum (read back, summed,
               C written)
  epilogue     fix-up done to the consumer's end (C written, the bulk stores read)
  span         the first CTA's entry to the last CTA's end: the kernel from inside

  bench/tools/timeline_summary.py FILE.csv|DIR ... [--cycles]

--cycles reports the phases from the SM clock (clock64) instead, in cycles: finer than the global timer where its
steps are coarse (the smallest step seen is printed).
"""
import argparse
import csv
import glob
import os
import statistics
import sys

STAMPS = ["entry", "setup", "first_stage", "loop_end", "stored", "arrived", "fixup_end", "exit"]
# The fix-up's parts (stored, arrived) are stamped only where the last unit has a workspace fix-up.
PHASES = [("set-up", "entry", "setup"), ("first stage", "setup", "first_stage"),
          ("main loop", "first_stage", "loop_end"), ("fix-up", "loop_end", "fixup_end"),
          ("  store", "loop_end", "stored"), ("  wait", "stored", "arrived"), ("  sum", "arrived", "fixup_end"),
          ("epilogue", "fixup_end", "exit")]


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = [{k: int(v) for k, v in r.items()} for r in csv.DictReader(f)]
    if not rows:
        raise ValueError(f"{path}: no CTA rows")
    missing = [f"{s}_ns" for s in STAMPS if f"{s}_ns" not in rows[0] and s not in ("stored", "arrived")]
    if missing:
        raise ValueError(f"{path}: not a timeline (no {', '.join(missing)})")
    return rows


def smallest_step(rows):
    """The global timer's smallest nonzero difference between two stamps of the launch (its resolution, or finer)."""
    values = sorted({r[f"{s}_ns"] for r in rows for s in STAMPS if r.get(f"{s}_ns")})
    steps = [b - a for a, b in zip(values, values[1:]) if b > a]
    return min(steps) if steps else 0


def summarize(path, rows, cycles):
    unit, scale = ("cycles", 1.0) if cycles else ("us", 1e-3)
    suffix = "_cycles" if cycles else "_ns"
    # A stamp never taken (CONSUMER_K's first stage) is 0: phases through it are left out for that CTA.
    def span(r, a, b):
        return (r[b + suffix] - r[a + suffix]) * scale if r.get(a + suffix) and r.get(b + suffix) else None

    first_entry = min(r["entry_ns"] for r in rows)
    lines = [f"{path}: {len(rows)} CTAs, {sum(r['units'] for r in rows)} units "
             f"(at most {max(r['units'] for r in rows)} per CTA), {len({r['sm'] for r in rows})} SMs; "
             f"global timer steps of {smallest_step(rows)} ns or less"]
    skew = [(r["entry_ns"] - first_entry) * 1e-3 for r in rows]
    lines.append(f"  {'start skew':<12} median {statistics.median(skew):8.3f}  max {max(skew):8.3f}  us")
    for name, a, b in PHASES:
        values = [v for v in (span(r, a, b) for r in rows) if v is not None]
        if values:
            lines.append(f"  {name:<12} median {statistics.median(values):8.3f}  max {max(values):8.3f}  {unit}")
    total = (max(r["exit_ns"] for r in rows) - first_entry) * 1e-3
    lines.append(f"  {'span':<12} {total:8.3f} us (first entry to last end)")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="timeline CSV files, or folders of them")
    ap.add_argument("--cycles", action="store_true", help="phases in SM clock cycles instead of microseconds")
    args = ap.parse_args()
    files = []
    for p in args.paths:
        files += sorted(glob.glob(os.path.join(p, "*.csv"))) if os.path.isdir(p) else [p]
    if not files:
        sys.exit("timeline_summary: no timeline files in " + ", ".join(args.paths))
    failed = False
    for path in files:
        try:
            print(summarize(path, read(path), args.cycles))
        except (OSError, ValueError, KeyError) as e:
            print(f"timeline_summary: {e}", file=sys.stderr)
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
