#!/usr/bin/env python3
"""Tests of bench/tools/model_check.py's pricing: a parameter a measured config does not name is priced at its off
value (the kernel that ran), not at the planner's best value of it.

  model_check_test.py TILEFORGE_CLI REPO_ROOT
"""
import csv
import json
import os
import subprocess
import sys
import unittest

TILEFORGE, ROOT = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(ROOT, "bench", "tools"))
import model_check  # noqa: E402  (found through the path above)

# A row measured unswapped (its sweep ran without "swap", so its config names no SWAP_AB): 128x4096x14336 in 128x128
# tiles, 4 slices, 2x1 clusters, one consumer, on an H100.
SWEEP = os.path.join(ROOT, "bench", "results", "h100", "2026-12-07l-latency-norm", "round1", "sweep.csv")
LABEL = "128x4096x14336/128x128-sk4-stk0-CONSUMERS=1-STAGES=6-CLUSTER_M=2"


def planned_seconds(row, config, extra):
    """The planner's price of `config` for `row` with `extra` pins, by the plan command directly."""
    cmd = [TILEFORGE, "plan", "--no-db", "-q", "--format", "json", "--profile", "h100-sxm", "--family", "sm90",
           "--shape", f"{row['m']}x{row['n']}x{row['k']}", "--dtype", row["dtype"], "--layout", row["layout"]]
    for pin in config.split()[1:] + extra:
        cmd += ["--set", pin]
    env = dict(os.environ, **model_check.SWITCHES)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return float(json.loads(out)["rows"][0]["choice"]["predicted_s"])


class AbsentPins(unittest.TestCase):
    def test_pins_only_what_the_planner_set_otherwise(self):
        chosen = {"BLOCK_M": 128, "SWAP_AB": 1, "CONSUMER_COLS": 0, "STREAM_K": 1, "SPLIT_K": 1}
        self.assertEqual(model_check.absent_pins(["BLOCK_M=128"], chosen), ["SWAP_AB=0", "STREAM_K=0"])

    def test_a_named_parameter_is_left_as_named(self):
        chosen = {"SWAP_AB": 1, "SPLIT_K": 4}
        self.assertEqual(model_check.absent_pins(["SWAP_AB=1", "SPLIT_K=4"], chosen), [])

    def test_an_undeclared_parameter_is_not_pinned(self):
        # CONSUMER_K is declared only under its switch: a plan without it must not be given a pin it refuses.
        self.assertEqual(model_check.absent_pins([], {"SWAP_AB": 0}), [])


class PricedAsRun(unittest.TestCase):
    def test_an_unswapped_row_is_priced_unswapped(self):
        with open(SWEEP, newline="", encoding="utf-8") as f:
            row = next(r for r in csv.DictReader(f) if r["label"] == LABEL)
        config = row["config"]
        self.assertNotIn("SWAP_AB", config)
        priced, why = model_check.price(TILEFORGE, "h100-sxm", row, config)
        self.assertEqual(why, "")
        unswapped = planned_seconds(row, config, ["SWAP_AB=0"])
        free = planned_seconds(row, config, [])
        # The planner left free swaps this tile (a different, faster kernel than the one measured): the test would
        # not tell the two apart otherwise.
        self.assertLess(free, 0.9 * unswapped)
        self.assertAlmostEqual(priced, unswapped, delta=1e-12)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
