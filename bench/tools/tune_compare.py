#!/usr/bin/env python3
# Reads `tileforge tune --format json` reports: the planner-vs-tuned table, and tune against an exhaustive search.
#
#   tune_compare.py summary REPORT.json ...          planner's pick / tuned best per shape, as a Markdown table
#   tune_compare.py ranks EXHAUSTIVE.json TUNE.json  the ranks to re-measure side by side: the exhaustive search's
#                                                    three fastest confirmed candidates and tune's winner ("1,4,9,23"),
#                                                    as today's planner ranks them (the exhaustive search may be older
#                                                    than the cost model: its configs are looked up, not its ranks;
#                                                    $TILEFORGE names the binary, default build/tileforge)
#   tune_compare.py versus REMEASURE.json EXHAUSTIVE.json TUNE.json
#                                                    tune's pick against the best of the exhaustive top three, from
#                                                    the side-by-side re-measure (--ranks), as a Markdown table
import os
import statistics
import sys

from tune_replay import key, plan
from tune_replay import load as results


def shape(r):
    return "x".join(str(v) for v in r["problem"]["shape"])


def confirmed(r):
    return sorted((c for c in r["candidates"] if c.get("confirmed")), key=lambda c: c["confirm"]["median_ms"])


def params(c):
    return " ".join(f"{k}={v}" for k, v in sorted(c["config"].items()) if k != "family")


def summary(paths):
    print("| shape | legal configs | measured | planner's pick (rank 1) | tuned winner (rank) | winner TFLOP/s "
          "| planner / tuned | tune wall s |")
    print("|---|---|---|---|---|---|---|---|")
    fractions = []
    for path in paths:
        for r in results(path):
            w = r.get("winner")
            pick = next((c for c in r["candidates"] if c["rank"] == 1), None)
            frac = r.get("planner_fraction")
            if frac is not None:
                fractions.append(frac)
            print(f'| {shape(r)} | {r["space_size"]} | {r["measured"]} | {params(pick) if pick else "-"} | '
                  f'{w["rank"] if w else "-"} | {w["tflops"]:.1f} | '
                  f'{"-" if frac is None else f"{frac:.3f}"} | {r["seconds"]["total"]:.1f} |'
                  if w else f'| {shape(r)} | {r["space_size"]} | {r["measured"]} | - | none | - | - | - |')
    if fractions:
        print(f"\nplanner / tuned over {len(fractions)} shapes: median {statistics.median(fractions):.3f}, "
              f"minimum {min(fractions):.3f}")


def ranks(exhaustive, tune):
    ex = results(exhaustive)[0]
    tu = results(tune)[0]
    today = plan(os.environ.get("TILEFORGE", "build/tileforge"), ex)
    top = [today[key(c["config"])][0] for c in confirmed(ex)[:3]]
    pick = tu["winner"]["rank"]
    print(",".join(str(r) for r in sorted(set(top + [pick]))))


def versus(remeasure, exhaustive, tune):
    rm = results(remeasure)[0]
    ex = results(exhaustive)[0]
    tu = results(tune)[0]
    by_config = {key(c["config"]): c for c in rm["candidates"] if c.get("confirmed")}
    pick = key(tu["winner"]["config"])
    top = [key(c["config"]) for c in confirmed(ex)[:3]]
    if pick not in by_config or not any(k in by_config for k in top):
        print(f"| {shape(rm)} | re-measure incomplete |")
        return
    best_ex = min(by_config[k]["confirm"]["median_ms"] for k in top if k in by_config)
    mine = by_config[pick]["confirm"]["median_ms"]
    top_ranks = ",".join(str(by_config[k]["rank"]) for k in top if k in by_config)
    print(f'| {shape(rm)} | {ex["space_size"]} | {tu["measured"]} ({100 * tu["measured"] / ex["space_size"]:.1f}%) | '
          f'{tu["seconds"]["total"]:.1f} | {ex["seconds"]["total"]:.1f} | rank {by_config[pick]["rank"]} {mine:.4f} ms | '
          f'ranks {top_ranks}: best {best_ex:.4f} ms | {best_ex / mine:.3f} |')


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__ if __doc__ else "usage: tune_compare.py summary|ranks|versus FILES")
    verb, files = sys.argv[1], sys.argv[2:]
    if verb == "summary":
        summary(files)
    elif verb == "ranks" and len(files) == 2:
        ranks(*files)
    elif verb == "versus" and len(files) == 3:
        versus(*files)
    else:
        sys.exit(f"tune_compare.py: unknown verb or wrong file count: {verb} {files}")


if __name__ == "__main__":
    main()
