#!/usr/bin/env python3
"""How well the planner's cost model ranks what was measured: every verified row of the GPU sweeps
(bench/results/<chip>/**/sweep.csv, written by scripts/gpu-splitk-sweep and scripts/gpu-kernel-sweep) priced again
by `tileforge plan` with the row's config pinned, on the chip record its folder names; then, per shape and kernel
family of each sweep (dispatch picks the family first, then ranks its configs), whether the config predicted
fastest is the one measured fastest, and what picking by prediction costs (regret: the measured time of the
predicted best over the measured best; among configs priced within 0.1% of each other, the slowest measured).

  bench/tools/model_check.py [--tileforge build/tileforge] [--chip h200|h100 ...] [--since YYYY-MM-DD]
                             [--limit CHIP=REGRET ...] [--csv OUT.csv] [SWEEP.csv ...]

--since keeps the sweeps whose results folder (named by its date) is that day's or later: older rows measured
kernels that have changed since. Prints one line per shape group and a summary per chip; --csv writes every priced
row. --limit fails the run (exit 1) where a chip's geometric-mean regret is above the number given: a model change
that ranks the measured rows worse is caught as a golden plan's change is. A config the space now refuses is
reported as refused, not priced. The experiment switches (TILEFORGE_SM90_DEEP_STAGES, TILEFORGE_SM90_ATOM_SPLIT,
TILEFORGE_SM90_CONSUMER_COLS, TILEFORGE_SM80_STREAM_K) are set so that configs measured under them are priced; a
parameter they declare that a row's config does not name (SWAP_AB, CONSUMER_COLS, STREAM_K, ...) is priced at its off
value, as the row's kernel ran (ABSENT_MEANS).
"""
import argparse
import concurrent.futures as futures
import csv
import glob
import json
import math
import os
import statistics
import subprocess
import sys

# The chip records of the results folders (bench/results/<folder>).
PROFILES = {"h200": "h200", "h100": "h100-sxm"}
SWITCHES = {"TILEFORGE_SM90_DEEP_STAGES": "1", "TILEFORGE_SM90_ATOM_SPLIT": "1", "TILEFORGE_SM90_CONSUMER_COLS": "1",
            "TILEFORGE_SM80_STREAM_K": "1"}


def below_results(path):
    """The folders between bench/results and a sweep's file (<chip>, <YYYY-MM-DD-name>, ...); [] outside it."""
    parts = os.path.normpath(os.path.dirname(path)).split(os.sep)
    return parts[parts.index("results") + 1:] if "results" in parts else []


def chip_of(path):
    folders = below_results(path)
    return folders[0] if folders else None


def results_date(path):
    """The date that names the results folder of a sweep (bench/results/<chip>/<YYYY-MM-DD...>/...), or ''."""
    folders = below_results(path)
    return folders[1][:10] if len(folders) > 1 else ""


def where(path):
    """A sweep's folder below bench/results (<chip>/<date-name>/...)."""
    return "/".join(below_results(path)) or os.path.dirname(path)


# Sweep labels' tokens (scripts/gpu-splitk-sweep's EXTRA) that ran a variant of the kernel through an environment
# switch the config does not name: the last slice's sum instead of the shared sum (TILEFORGE_SM90_SHARED_SUM=0), the
# shared sum launched without the cooperative attribute, the dropped experiment that summed split-K in a cluster's
# shared memory (TILEFORGE_SM90_CLUSTER_SUM=1, bench/results/h200/2026-12-04e-cluster-sum), and the timeline
# diagnostic (TILEFORGE_SM90_TIMELINE: every launch waits for its read-back, so the row's time is not the kernel's).
# Priced as the config they name, they would stand for a kernel that did not run.
VARIANT_TOKENS = {"last", "uncooperative", "cluster", "tl"}


# Switches that declare a parameter only rows naming it need: set for every row, they would let the planner choose the
# parameter for a row measured before it existed (its config does not pin it).
NAMED_SWITCHES = {"CONSUMER_K=": {"TILEFORGE_SM90_CONSUMER_K": "1"}, "SPLIT_CLUSTER=": {"TILEFORGE_SM90_CLUSTER_SUM": "1"}}


def named_switches(config):
    """The switches of NAMED_SWITCHES whose parameter `config` names."""
    env = {}
    for token, switch in NAMED_SWITCHES.items():
        if token in config:
            env.update(switch)
    return env


# Parameters whose absence from a measured config means their "off" value: the row's kernel ran so because the
# parameter did not exist yet or its switch was off (a sweep row without "swap" runs with TILEFORGE_SM90_SWAP_AB=0,
# and its config names no SWAP_AB). Left free, the planner would price such a row at its best value of the parameter
# (a 128x128 split-K tile of 128x4096x14336 priced swapped at 51 us against the 81-84 us of the unswapped kernel that
# ran, 90-91 measured), which is a kernel that did not run.
ABSENT_MEANS = {"SWAP_AB": 0, "CONSUMER_COLS": 0, "CONSUMER_K": 0, "SPLIT_CLUSTER": 0, "REDUCE": 0, "STREAM_K": 0,
                "SPLIT_K": 1}


def absent_pins(pins, chosen):
    """`--set` pins for the ABSENT_MEANS parameters that `pins` leaves free and the planner's `chosen` config (its
    declared parameters and values) set otherwise than their off value."""
    named = {p.split("=", 1)[0] for p in pins}
    return [f"{name}={off}" for name, off in ABSENT_MEANS.items()
            if name not in named and name in chosen and chosen[name] != off]


def runs_a_variant(label):
    """Whether a sweep row's label names a kernel variant its config does not describe (VARIANT_TOKENS)."""
    return bool(VARIANT_TOKENS & set(label.rsplit("/", 1)[-1].split("-")))


def rows_of(path):
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r.get("backend") != "cuda" or r.get("fallback") != "false" or r.get("verified") != "true":
                continue
            if runs_a_variant(r.get("label", "")):
                continue
            config = r.get("config", "")
            if not (config.startswith("sm90 ") or config.startswith("sm80 ")):
                continue
            try:
                ms = float(r["median_ms"])
            except (KeyError, ValueError):
                continue
            yield r, config, ms


def price(tileforge, profile, r, config):
    """The predicted seconds of `config` for row `r`, or (None, why)."""
    family, *pins = config.split()
    cmd = [tileforge, "plan", "--no-db", "-q", "--format", "json", "--profile", profile, "--family", family,
           "--shape", f"{r['m']}x{r['n']}x{r['k']}", "--dtype", r["dtype"], "--out-dtype", r["out_dtype"],
           "--accum", r["accum"], "--layout", r["layout"], "--lda", r["lda"], "--ldb", r["ldb"], "--ldc", r["ldc"],
           "--batch", r["batch"]]
    for p in pins:
        cmd += ["--set", p]
    if "REDUCE=1" in pins:
        cmd.append("--nondeterministic")
    env = dict(os.environ, **SWITCHES, **named_switches(config))

    def plan(extra):
        done = subprocess.run(cmd + [a for p in extra for a in ("--set", p)], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            return None, (done.stderr.strip().splitlines() or ["plan failed"])[-1][:160]
        try:
            return json.loads(done.stdout)["rows"][0]["choice"], ""
        except (ValueError, KeyError, IndexError, TypeError):
            return None, "no prediction in plan's JSON"

    choice, why = plan([])
    # A parameter the row does not name ran at its off value: where the planner chose otherwise, price it there.
    extra = absent_pins(pins, choice.get("config", {})) if choice else []
    if extra:
        choice, why = plan(extra)
    try:
        return (float(choice["predicted_s"]), "") if choice else (None, why)
    except (ValueError, KeyError, TypeError):
        return None, "no prediction in plan's JSON"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="*")
    ap.add_argument("--tileforge", default="build/tileforge")
    ap.add_argument("--chip", action="append", default=[], help="results folders to read (default: h200, h100)")
    ap.add_argument("--since", default="", help="only results folders dated this day or later (YYYY-MM-DD)")
    ap.add_argument("--limit", action="append", default=[], metavar="CHIP=REGRET",
                    help="exit 1 where CHIP's geometric-mean regret is above REGRET")
    ap.add_argument("--csv", help="write every priced row here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    # Read before any pricing: a malformed limit fails at once.
    limits = {}
    for item in args.limit:
        chip, _, value = item.partition("=")
        try:
            limits[chip] = float(value)
        except ValueError:
            sys.exit(f"model_check: --limit {item}: expected CHIP=REGRET, e.g. h200=1.02")

    paths = args.sweeps
    if not paths:
        for chip in args.chip or sorted(PROFILES):
            paths += sorted(glob.glob(f"bench/results/{chip}/**/sweep.csv", recursive=True))
    if args.since:
        paths = [p for p in paths if results_date(p) >= args.since]
    work = []
    for path in paths:
        chip = chip_of(path)
        if chip not in PROFILES:
            print(f"model_check: {path}: no chip record for results folder '{chip}' (known: {', '.join(PROFILES)})",
                  file=sys.stderr)
            continue
        for r, config, ms in rows_of(path):
            work.append((path, chip, r, config, ms))
    if not work:
        sys.exit("model_check: no verified sm90 or sm80 rows in " + (", ".join(paths) or "bench/results"))

    with futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        priced = list(pool.map(lambda w: price(args.tileforge, PROFILES[w[1]], w[2], w[3]), work))

    groups = {}
    out_rows = []
    for (path, chip, r, config, ms), (pred, why) in zip(work, priced):
        shape = f"{r['m']}x{r['n']}x{r['k']} {r['layout']} {r['dtype']}"
        out_rows.append({"sweep": path, "chip": chip, "shape": shape, "label": r.get("label", ""), "config": config,
                         "measured_us": ms * 1e3, "predicted_us": pred * 1e6 if pred else "", "refused": why})
        if pred is None:
            continue
        # Rows of one config measured twice in a sweep: the faster measurement stands.
        # Per family: dispatch picks the family first (its preference on the chip), then ranks its configs.
        g = groups.setdefault((chip, path, f"{shape} {config.split()[0]}"), {})
        if config not in g or ms * 1e3 < g[config][0]:
            g[config] = (ms * 1e3, pred * 1e6)

    per_chip = {}
    print(f"{'chip':<5} {'shape, family':<31} {'n':>3} {'best measured us':>16} {'pick by model us':>16} {'regret':>7} "
          f"{'median meas/pred':>16}  sweep")
    for (chip, path, shape), g in sorted(groups.items()):
        if len(g) < 2:
            continue
        best_meas = min(v[0] for v in g.values())
        # Configs the model prices alike (within 0.1%) are a tie that dispatch breaks by its own order, which says
        # nothing of their measured times: the slowest of them counts.
        fastest = min(v[1] for v in g.values())
        pick = max((v for v in g.values() if v[1] <= fastest * 1.001), key=lambda v: v[0])
        regret = pick[0] / best_meas
        resid = statistics.median(v[0] / v[1] for v in g.values())
        per_chip.setdefault(chip, []).append(regret)
        print(f"{chip:<5} {shape:<31} {len(g):>3} {best_meas:>16.2f} {pick[0]:>16.2f} {regret:>7.3f} {resid:>16.3f}  "
              f"{where(path)}")
    failed = []
    for chip, regrets in sorted(per_chip.items()):
        geo = math.exp(sum(math.log(x) for x in regrets) / len(regrets))
        if chip in limits and geo > limits[chip]:
            failed.append(f"{chip}: geometric-mean regret {geo:.4f} above the limit {limits[chip]}")
        exact = sum(1 for x in regrets if x <= 1.0 + 1e-9)
        within = sum(1 for x in regrets if x <= 1.03)
        print(f"{chip}: {len(regrets)} shape groups; the predicted best is the measured best in {exact}, within 3% in "
              f"{within}; geometric-mean regret {geo:.4f}, worst {max(regrets):.3f}")
    refused = [o for o in out_rows if o["refused"]]
    if refused:
        print(f"{len(refused)} rows not priced (the space refuses their config now, or plan failed); e.g. "
              f"{refused[0]['config']}: {refused[0]['refused']}")
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(out_rows[0].keys()))
            w.writeheader()
            w.writerows(out_rows)
    for chip in limits:
        if chip not in per_chip:
            failed.append(f"{chip}: no shape group to check against its limit")
    if failed:
        sys.exit("model_check: " + "; ".join(failed))


if __name__ == "__main__":
    main()
