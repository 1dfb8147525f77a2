#!/usr/bin/env python3
"""Golden plans: `tileforge plan --format json --explain` for every builtin profile over the public suite, the CPU
suite and two shapes in all layouts, compared with the files kept in tests/plan/golden/ (made before the kernel
families became plug-ins). A refactoring of the planner must leave every plan as it was; a deliberate change
regenerates the files with --update and says why in its commit.

    plan_golden_check.py TILEFORGE SOURCE_DIR [--update]
"""
import gzip
import json
import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Numbers may move in the last bits when the order of floating-point operations changes; nothing else may move.
REL_TOL = 1e-9


def shapes(suite):
    return ["%dx%dx%d" % tuple(s) for s in json.loads(suite.read_text())["shapes"]]


def cases(src):
    public = shapes(src / "bench/suites/public.json")
    cpu = shapes(src / "bench/suites/cpu.json")
    for p in sorted((src / "profiles").glob("*.json")):
        name = p.stem
        yield f"{name}-public", ["--profile", name, "--shape", *public, "--dtype", "f16", "--out-dtype", "f16"]
        yield f"{name}-cpu", ["--profile", name, "--shape", *cpu, "--dtype", "f32"]
        yield f"{name}-layouts", ["--profile", name, "--shape", "1024x1024x1024", "4095x4097x4093", "--dtype", "bf16",
                                  "--out-dtype", "f32", "--layout", "all"]


def run(tf, args):
    r = subprocess.run([tf, "plan", *args, "--format", "json", "--explain"], capture_output=True, text=True)
    # Exit 1 is an unserved plan (a GPU profile for f32, say): its JSON still says why, and is compared too.
    if r.returncode not in (0, 1) or not r.stdout.startswith("{"):
        raise SystemExit(f"tileforge plan {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    doc = json.loads(r.stdout)
    # The kept files predate the shared envelope: its plans are the rows, its environment is not part of a plan.
    return {"tool": doc["tool"], "version": doc["version"], "plans": doc["rows"]}


def diff(a, b, path, out):
    """Appends the paths where a and b differ (numbers within REL_TOL are equal)."""
    if len(out) >= 20:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {'missing now' if k not in b else 'new'}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} entries, now {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if not math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0):
            out.append(f"{path}: {a!r}, now {b!r}")
    elif a != b:
        out.append(f"{path}: {a!r}, now {b!r}")


def main():
    tf, src = sys.argv[1], Path(sys.argv[2])
    update = "--update" in sys.argv[3:]
    golden = src / "tests/plan/golden"
    todo = list(cases(src))
    with ThreadPoolExecutor(max_workers=2) as pool:
        plans = list(pool.map(lambda c: run(tf, c[1]), todo))
    failed = 0
    for (name, _), plan in zip(todo, plans):
        f = golden / f"{name}.json.gz"
        if update:
            # mtime 0: a regenerated file whose plans did not change is byte for byte the same.
            with open(f, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as z:
                z.write(json.dumps(plan, indent=0, sort_keys=True).encode())
            continue
        if not f.exists():
            print(f"FAIL {name}: no golden file {f.name} (run with --update and commit it)")
            failed += 1
            continue
        with gzip.open(f, "rt") as g:
            want = json.load(g)
        out = []
        diff(want, plan, name, out)
        if out:
            failed += 1
            print(f"FAIL {name}:")
            for line in out:
                print("   ", line)
    if update:
        print(f"wrote {len(todo)} golden plans to {golden}")
        return 0
    print(f"{len(todo) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
