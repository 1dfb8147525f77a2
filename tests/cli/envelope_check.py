#!/usr/bin/env python3
"""Runs every verb that writes JSON on the CPU on a tiny shape and validates each document against the envelope schema.

    envelope_check.py TILEFORGE_CLI SCHEMA WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

import jsonschema


def run(cli, args, ok=(0,)):
    proc = subprocess.run([cli, *args], capture_output=True, text=True, timeout=600)
    if proc.returncode not in ok:
        sys.exit(f"tileforge {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def keys(doc, path=""):
    """Every key path in a document, to find rates written in another unit."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield f"{path}/{k}"
            yield from keys(v, f"{path}/{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from keys(v, f"{path}[{i}]")


def main():
    cli, schema_path, work = sys.argv[1], sys.argv[2], sys.argv[3]
    schema = json.load(open(schema_path))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    db = os.path.join(work, "tune.db")
    shape = ["--shape", "64x64x64"]
    quick = ["--device", "cpu", "--min-reps", "3", "--min-time", "0", "--max-time", "0.05", "--quiet"]
    bench = os.path.join(work, "bench.json")

    docs = {}
    run(cli, ["bench", *shape, *quick, "--no-db", "--format", "json", "--out", bench])
    docs["bench"] = json.load(open(bench))
    # --store-noisy: the record must exist for `db list`, however busy the tests beside this one make the machine.
    docs["tune"] = json.loads(run(cli, ["tune", *shape, "--device", "cpu", "--top", "2", "--budget", "5", "--store-noisy",
                                        "--db", db, "--format", "json", "--quiet"]).stdout)
    # With the DB tune wrote: each plan's row carries the DB's record ("tuned").
    docs["plan"] = json.loads(run(cli, ["plan", *shape, "--device", "cpu", "--db", db, "--format", "json"]).stdout)
    docs["verify"] = json.loads(run(cli, ["verify", *shape, "--device", "cpu", "--no-db", "--format", "json",
                                          "--quiet"]).stdout)
    docs["ladder"] = json.loads(run(cli, ["ladder", *shape, *quick, "--no-db", "--candidates", "1",
                                          "--format", "json"]).stdout)
    docs["compare"] = json.loads(run(cli, ["compare", bench, bench, "--format", "json"]).stdout)
    docs["devices"] = json.loads(run(cli, ["devices", "--device", "cpu", "--format", "json"]).stdout)
    docs["db list"] = json.loads(run(cli, ["db", "list", "--db", db, "--format", "json"]).stdout)
    if not docs["db list"]["rows"]:
        sys.exit("db list: tune stored no record to show")
    record = str(docs["db list"]["rows"][0]["id"])
    docs["db show"] = json.loads(run(cli, ["db", "show", record, "--db", db, "--format", "json"]).stdout)
    docs["db check"] = json.loads(run(cli, ["db", "check", "--db", db, "--format", "json"]).stdout)
    # import and prune into a copy: the export imported back (every record kept), then a dry run that names them all.
    exported = os.path.join(work, "export.json")
    run(cli, ["db", "export", "--db", db, "--out", exported, "--quiet"])
    copy = os.path.join(work, "copy.db")
    run(cli, ["db", "import", exported, "--db", copy, "--quiet"])
    imported = os.path.join(work, "import.json")
    run(cli, ["db", "import", exported, "--db", copy, "--out", imported, "--quiet"])
    docs["db import"] = json.load(open(imported))
    docs["db prune"] = json.loads(run(cli, ["db", "prune", "--db", copy, "--older-than", "0s", "--dry-run",
                                            "--format", "json"]).stdout)

    failed = 0
    versions = set()
    for verb, doc in docs.items():
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors:
            print(f"{verb}: {'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
        problems = [f"{len(errors)} schema violations"] if errors else []
        if doc.get("verb") != verb:
            problems.append(f"verb is {doc.get('verb')!r}")
        if verb != "db check" and not doc.get("rows"):
            problems.append("no rows")
        if verb == "plan" and not all((row.get("tuned") or {}).get("found") for row in doc.get("rows", [])):
            problems.append("a plan row without the tuned record tune stored")
        # JSON carries rates in TFLOP/s only; GFLOP/s is for tables.
        problems += [f"{k}: a rate in GFLOP/s" for k in keys(doc) if "gflop" in k.lower()]
        versions.add((doc.get("version"), (doc.get("environment") or {}).get("tool_version")))
        if problems:
            failed += 1
            print(f"FAIL {verb}: {'; '.join(problems)}")
        else:
            print(f"ok {verb}: {len(doc['rows'])} rows")
    # One build wrote them all: one version, the same at the top and in the environment.
    if len(versions) != 1 or len(set(next(iter(versions)))) != 1:
        failed += 1
        print(f"FAIL: the documents name different versions: {sorted(map(str, versions))}")
    # Readers take the envelope: compare refuses a report of another verb by name.
    tune = os.path.join(work, "tune.json")
    json.dump(docs["tune"], open(tune, "w"))
    proc = run(cli, ["compare", bench, tune], ok=(2,))
    if "tune" not in proc.stderr:
        failed += 1
        print(f"FAIL: compare of a tune report says {proc.stderr!r}")
    print(f"{len(docs) - failed} of {len(docs)} verbs write the envelope")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
