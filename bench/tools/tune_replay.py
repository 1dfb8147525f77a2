#!/usr/bin/env python3
# Replays `tileforge tune` on kept exhaustive searches with today's cost model: the planner ranks the same space
# again (`tileforge plan --format json`), and tune's screening (the top N in rank order, the model-based early stop)
# is simulated on the exhaustive search's measured screening times. A change to the cost model can then be judged on
# every measured config of every kept search before any GPU time is spent.
#
#   tune_replay.py [--tileforge BUILD/tileforge] [--profile CHIP] [--top 16] [--slack 0.10] [--after 3] EXHAUSTIVE.json[.gz] ...
#
# Reports of a plain tune (the planner's top N) replay the same way on the configs they measured; there the rank-1
# pick may be one they did not measure.
#
# Per report: how many configs the exhaustive search measured, the rank the planner now gives the fastest of
# them, Spearman's rank correlation between prediction and measurement, the simulated tune's screened count and
# its best / the exhaustive best (screening medians), and the planner's rank-1 pick / the exhaustive best.
import argparse
import gzip
import json
import subprocess
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    # "rows" since tune's JSON took the shared envelope; kept searches written before it hold "results".
    return doc["rows"] if "rows" in doc else doc["results"]


def key(cfg):
    return tuple(sorted((k, v) for k, v in cfg.items() if k != "family"))


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for pos, i in enumerate(order):
            r[i] = float(pos)
        return r

    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx) ** 0.5
    vy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (vx * vy) if vx and vy else float("nan")


def plan(tileforge, report, profile=None):
    prob = report["problem"]
    configs = [c["config"] for c in report["candidates"]]
    names = {k for c in configs for k in c if k != "family"}
    pins = {k: configs[0][k] for k in names if len({c.get(k) for c in configs}) == 1}
    # A CPU search was planned for the host it ran on (profile "host-cpu"): plan for this host again, which is
    # only meaningful on the same machine, or for --profile, a record of the host it ran on; a GPU search names a
    # built-in profile.
    if profile:
        chip = ["--profile", profile]
    else:
        chip = ["--device", "cpu"] if report["device"] == "cpu" else ["--profile", report["profile"]]
    cmd = [tileforge, "plan", "--shape", "x".join(map(str, prob["shape"])), "--dtype", prob["dtype"], "--out-dtype",
           prob["out_dtype"], "--layout", prob["layout"], *chip, "--format", "json", "--top", "1000000"]
    # The family the search measured: on a chip that several families serve, the planner's own choice may be another.
    families = {c.get("family") for c in configs} - {None}
    if len(families) == 1:
        cmd += ["--family", families.pop()]
    for k, v in sorted(pins.items()):
        cmd += ["--set", f"{k}={v}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    p = json.loads(out)["rows"][0]
    ranked = [p["choice"]] + p["alternatives"] if "choice" in p else p["alternatives"]
    return {key(a["config"]): (a.get("rank", i + 1), a["predicted_s"] * 1e3) for i, a in enumerate(ranked)}


def replay(report, predicted, top, slack, after):
    measured = {}
    for c in report["candidates"]:
        s = c.get("screen") or {}
        if s.get("reps"):
            measured[key(c["config"])] = s["median_ms"]
    common = [k for k in measured if k in predicted]
    best = min(measured[k] for k in common)
    order = sorted(common, key=lambda k: predicted[k][0])
    fastest = min(common, key=lambda k: measured[k])
    best_ms, best_ratio, screened = float("inf"), float("inf"), 0
    for k in order[:top]:
        pred = predicted[k][1]
        if screened >= after and pred * best_ratio * (1 - slack) >= best_ms:
            break
        screened += 1
        best_ms = min(best_ms, measured[k])
        best_ratio = min(best_ratio, measured[k] / pred)
    rank1 = min(predicted, key=lambda k: predicted[k][0])
    return {
        "measured": len(common),
        "rank1_measured": rank1 in measured,
        "best_rank": predicted[fastest][0],
        "spearman": spearman([predicted[k][1] for k in common], [measured[k] for k in common]),
        "screened": screened,
        "tune_vs_best": best / best_ms,
        "pick_vs_best": best / measured[rank1] if rank1 in measured else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tileforge", default="build/tileforge")
    ap.add_argument("--top", type=int, default=16)
    ap.add_argument("--slack", type=float, default=0.10)
    ap.add_argument("--after", type=int, default=3)
    ap.add_argument("--profile", help="plan for this profile (name or JSON file) instead of the search's own chip: "
                    "for CPU searches made on another host")
    ap.add_argument("reports", nargs="+")
    a = ap.parse_args()
    print("| shape | measured | planner rank of the fastest | Spearman | screened | tune / best | rank 1 / best |")
    print("|---|---|---|---|---|---|---|")
    picks = []
    for path in a.reports:
        for r in load(path):
            out = replay(r, plan(a.tileforge, r, a.profile), a.top, a.slack, a.after)
            shape = "x".join(map(str, r["problem"]["shape"]))
            pick = out["pick_vs_best"]
            if pick is not None:
                picks.append(pick)
            print(f'| {shape} | {out["measured"]} | {out["best_rank"]} | {out["spearman"]:.3f} | {out["screened"]} | '
                  f'{out["tune_vs_best"]:.3f} | {"not measured" if pick is None else f"{pick:.3f}"} |')
    if picks:
        picks.sort()
        print(f"\nrank 1 / best where rank 1 was measured: {len(picks)} shapes, median {picks[len(picks) // 2]:.3f}, "
              f"minimum {picks[0]:.3f}")


if __name__ == "__main__":
    sys.exit(main())
