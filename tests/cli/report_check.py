#!/usr/bin/env python3
"""tileforge report in headless Chromium: a bench, a ladder and a tune report are drawn into one page; each chart holds
as many marks as its data has rows (counted here from the JSON), the page's own script ran, and Chromium logged no
console error. Exits 77 (skipped) where Chromium is not installed.

    report_check.py TILEFORGE_CLI WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def main():
    cli, work = sys.argv[1], sys.argv[2]
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("SKIPPED: Chromium is not installed (Debian package chromium)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    quick = ["--device", "cpu", "--no-db", "--min-time", "0", "--min-reps", "3", "--max-time", "0.05", "-q"]
    bench, ladder, tune = (os.path.join(work, f) for f in ("bench.json", "ladder.json", "tune.json"))
    run([cli, "bench", "--shape", "96x80x64", "--shape", "128x64x32", "--shape", "16x256x128", "--format", "json",
         "--out", bench] + quick)
    run([cli, "ladder", "--shape", "96x80x64", "--candidates", "2", "--format", "json", "--out", ladder] + quick)
    run([cli, "tune", "--shape", "64x64x64", "--device", "cpu", "--db", os.path.join(work, "t.db"), "--budget", "2",
         "--format", "json", "--out", tune, "-q"])
    page = os.path.join(work, "report.html")
    run([cli, "report", bench, ladder, tune, "--out", page, "--svg-dir", os.path.join(work, "svg")])

    # What each chart must hold, from the data itself.
    b, lad, t = (json.load(open(f)) for f in (bench, ladder, tune))
    expected = {
        "roofline": sum(1 for r in b["rows"] if r.get("tflops") and r.get("gbps"))
        + sum(1 for r in b["rows"] if r.get("tflops") and r.get("gbps") and (r.get("native") or {}).get("tflops")),
        "ratio": sum(1 for r in b["rows"] if isinstance(r.get("ratio"), (int, float))),
        "ladder": sum(1 for r in lad["rows"] if isinstance(r.get("tflops"), (int, float))),
        "tune": sum(1 for c in t["rows"][0]["candidates"] if (c.get("screen") or {}).get("median_ms") is not None),
    }
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                           "--dump-dom", "file://" + os.path.abspath(page)],
                          capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    if 'data-charts="4"' not in dom:
        sys.exit(f"FAIL: the page's script did not run or did not find 4 charts; stderr: {proc.stderr[-2000:]}")
    console_errors = [l for l in proc.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    if console_errors:
        sys.exit("FAIL: the page logged errors: " + "\n".join(console_errors))
    charts = re.findall(r'<svg class="chart" data-kind="(\w+)" data-marks="(\d+)"(.*?)</svg>', dom, re.S)
    if len(charts) != 4:
        sys.exit(f"FAIL: {len(charts)} charts in the DOM (want 4)")
    for kind, marks, body in charts:
        drawn = len(re.findall(r'class="mark', body))
        want = expected[kind]
        print(f"{kind}: {drawn} marks drawn, data-marks {marks}, {want} rows of data")
        if want == 0 or drawn != want or int(marks) != want:
            sys.exit(f"FAIL: chart {kind} draws {drawn} marks (data-marks {marks}) for {want} rows")
    if sorted(os.listdir(os.path.join(work, "svg"))) != sorted(
            ["roofline-1.svg", "ratio-1.svg", "ladder-2.svg", "tune-3-1.svg"]):
        sys.exit(f"FAIL: --svg-dir holds {os.listdir(os.path.join(work, 'svg'))}")
    # A file that is no report is refused by name, nothing written.
    bad = os.path.join(work, "bad.json")
    open(bad, "w").write('{"plans": []}')
    proc = subprocess.run([cli, "report", bad, "--out", os.path.join(work, "bad.html")], capture_output=True, text=True)
    if proc.returncode != 2 or "bad.json" not in proc.stderr or os.path.exists(os.path.join(work, "bad.html")):
        sys.exit(f"FAIL: a non-report input: exit {proc.returncode}, stderr {proc.stderr!r}")
    print("report ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
