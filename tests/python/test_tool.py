"""plan, bench and devices as dicts (the tool's JSON), bench checked against schemas/bench.schema.json."""
import json
import os

import pytest

import tileforge

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_plan_is_the_tools_json():
    report = tileforge.plan((256, 128, 64), dtype="f32", device="cpu")
    [entry] = report["rows"]
    assert entry["problem"]["m"] == 256 and entry["problem"]["n"] == 128 and entry["problem"]["k"] == 64
    assert report["tool"] == "tileforge" and entry["choice"]


def test_plan_for_another_chip():
    [entry] = tileforge.plan("4096x4096x4096", dtype="f16", profile="h200")["rows"]
    assert entry["profile"]["name"] == "h200" and entry["served"]


def test_bench_matches_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    report = tileforge.bench((64, 64, 64), device="cpu", min_reps=3, min_time=0, max_time=0.05, no_db=True)
    with open(os.path.join(ROOT, "schemas", "bench.schema.json")) as f:
        jsonschema.validate(report, json.load(f))
    [row] = report["rows"]
    assert row["shape"] == [64, 64, 64] and row["backend"] == "cpu" and row["verified"]


def test_a_bad_option_raises_with_the_tools_message():
    with pytest.raises(RuntimeError, match="dtype"):
        tileforge.plan((64, 64, 64), dtype="f64")
    with pytest.raises(ValueError, match="shape"):
        tileforge.plan((64, 64))
