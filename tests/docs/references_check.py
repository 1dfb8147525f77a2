#!/usr/bin/env python3
"""Every file the docs point at exists: relative Markdown links in README.md and docs/, repository paths in
backticks there, and every bench/results path cited anywhere in the sources, scripts and docs (results that nothing
cites are left to git history; a citation must not outlive its folder). A result removed from the tree is cited in
one marked form, its path under bench/results followed by "(removed from the tree; in git at SHA)", e.g.
"h200/2026-12-02-l2-policy (removed from the tree; in git at 58c5705)": where the source tree is a git checkout
with its history, that commit must hold the path (git cat-file -e SHA:bench/results/<path>); elsewhere (a source
archive, a shallow clone) the form is not checked.

    references_check.py SOURCE_DIR
"""
import re
import subprocess
import sys
from pathlib import Path

# Repository paths worth checking when they appear in backticks: the tree's own top folders.
TOP = ("src/", "docs/", "scripts/", "tests/", "bench/", "tools/", "profiles/", "include/", "cmake/", "examples/",
       "python/", "schemas/")
# Text that marks a path as a pattern or a placeholder, not a file.
PLACEHOLDER = re.compile(r"[<>*{}$\[\]|]|\.\.|NAME|SHAPE|OUTDIR|OUT/|DIR\b|FILE\b")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
# A span in backticks; each of its words is checked, so `scripts/cpu-check OUT 0,1` checks the script.
TICK = re.compile(r"`([^`\n]+)`")
RESULTS = re.compile(r"bench/results/[A-Za-z0-9_.\-/]+")
# A result removed from the tree: its path under bench/results, then where git history keeps it.
REMOVED = re.compile(r"([A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)+)/? \(removed from the tree; in git at ([0-9a-f]{7,40})\)")


def clean(path):
    return path.rstrip(".,:;)'\"")


def git_history(root):
    """True when root is a git checkout whose history can be read (not a source archive, not a shallow clone)."""
    if not (root / ".git").exists():
        return False
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True, check=False)
    except OSError:  # no git on this machine
        return False
    return out.returncode == 0 and out.stdout.strip() == "false"


def in_history(root, sha, path):
    return subprocess.run(["git", "-C", str(root), "cat-file", "-e", f"{sha}:bench/results/{path}"],
                          capture_output=True, check=False).returncode == 0


def main():
    root = Path(sys.argv[1]).resolve()
    docs = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    missing = []
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        rel = doc.relative_to(root)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            base = root if target.startswith("/") else doc.parent
            if not (base / target.lstrip("/")).exists():
                missing.append(f"{rel}: link to {target}")
        for target in (word for span in TICK.findall(text) for word in span.split()):
            target = clean(target)
            if target.startswith("./"):
                target = target[2:]
            if not target.startswith(TOP) or PLACEHOLDER.search(target):
                continue
            # "src/plan/plan.cpp:42" and "file.cpp::name" point into a file: check the file.
            target = re.split(r":", target, maxsplit=1)[0]
            if not (root / target).exists():
                missing.append(f"{rel}: `{target}`")
    cited_in = [p for p in root.rglob("*") if p.is_file() and p.suffix in {".md", ".cpp", ".hpp", ".cuh", ".cu", ".py", ".txt", ".json"}
                or (p.is_file() and p.parent.name == "scripts")]
    for path in cited_in:
        parts = path.relative_to(root).parts
        if parts[0].startswith("build") or parts[0].startswith(".") or parts[:2] == ("bench", "results"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for target in RESULTS.findall(text):
            target = clean(target)
            if PLACEHOLDER.search(target) or target.endswith("/<chip>"):
                continue
            if not (root / target).exists():
                missing.append(f"{path.relative_to(root)}: {target}")
    removed = 0
    if git_history(root):
        for doc in docs:
            for path, sha in REMOVED.findall(doc.read_text(encoding="utf-8")):
                removed += 1
                if not in_history(root, sha, path):
                    missing.append(f"{doc.relative_to(root)}: {path} not in git at {sha}")
    for m in sorted(set(missing)):
        print("missing:", m)
    print(f"{len(docs)} docs read; {removed} removed results checked in git history; "
          f"{len(set(missing))} references to files that do not exist")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
