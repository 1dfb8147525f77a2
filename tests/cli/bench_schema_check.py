#!/usr/bin/env python3
"""Runs `tileforge bench --format json` on small shapes and validates the output against the bench schema."""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema


def run(cli, args):
    proc = subprocess.run([cli, "bench", *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"tileforge bench {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def check(schema, doc, what):
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    errors = sorted(validator_class(schema).iter_errors(doc), key=lambda e: list(e.path))
    for e in errors:
        print(f"{what}: {'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
    if errors:
        sys.exit(f"{what}: {len(errors)} schema violations")
    if not doc["rows"]:
        sys.exit(f"{what}: no rows")
    # The envelope every verb shares (schemas/envelope.schema.json), beyond the bench schema's required keys.
    if doc.get("tool") != "tileforge" or doc.get("verb") != "bench" or doc.get("version") != doc["environment"]["tool_version"]:
        sys.exit(f"{what}: no envelope: tool {doc.get('tool')!r} verb {doc.get('verb')!r} version {doc.get('version')!r}")
    for row in doc["rows"]:
        if row["native"]["backend"] is None and row["ratio"] is not None:
            sys.exit(f"{what}: a row without native has a ratio")
        if row["fallback"] and row["ratio"] is not None:
            sys.exit(f"{what}: a fallback row has a ratio")
        if row["reps"] < 1:
            sys.exit(f"{what}: a row was not timed")


def main():
    schema = json.load(open(sys.argv[1]))
    cli = os.environ["TILEFORGE_CLI"]
    quick = ["--min-reps", "3", "--min-time", "0", "--max-time", "0.05", "--quiet"]

    # Every layout, a prime shape and a tight one, to stdout.
    proc = run(cli, ["--shape", "64x48x32", "--shape", "17x5x33", "--layout", "all", "--format", "json", *quick])
    doc = json.loads(proc.stdout)
    check(schema, doc, "f32 to stdout")
    if len(doc["rows"]) != 8:
        sys.exit(f"expected 8 rows, got {len(doc['rows'])}")
    env = doc["environment"]
    if env["cache_state"] != "warm" or env["threads"] < 1 or env["seed"] != 42:
        sys.exit(f"unexpected environment: {env}")

    # BF16 inputs, leading dimensions, a batch and a seed, written with --out.
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        run(cli, ["--shape", "33x20x40", "--dtype", "bf16", "--out-dtype", "f32", "--lda", "48", "--ldb", "24",
                  "--ldc", "21", "--batch", "2", "--seed", "7", "--layout", "RR", "--format", "json", "--out", out,
                  *quick])
        doc = json.load(open(out))
        check(schema, doc, "bf16 with --out")
        row = doc["rows"][0]
        if row["ld"] != [48, 24, 21] or row["batch"] != 2 or doc["environment"]["seed"] != 7:
            sys.exit(f"options not recorded: ld {row['ld']} batch {row['batch']}")
        if sorted(os.listdir(tmp)) != ["bench.json"]:
            sys.exit(f"temporary files left behind: {os.listdir(tmp)}")
    print("bench JSON matches the schema")


if __name__ == "__main__":
    main()
