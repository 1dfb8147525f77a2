#!/usr/bin/env python3
"""Holds the source tree to issue 20's sizes: no file over 600 lines, no function over 100 (lizard measures them).

The functions already longer are listed in long_functions.txt with the length they had when the list was made: one
of them growing, a new long function, or a listed one now short enough (take it off the list) fails the check, so
the list only shrinks.

    size_check.py REPO_ROOT [--update]   (--update rewrites the list from the tree as it is)
"""
import pathlib
import sys

import lizard

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100
DIRS = ("src", "tools", "include")
SUFFIXES = {".cpp", ".hpp", ".cuh", ".h", ".cu"}


def sources(root):
    for d in DIRS:
        for p in sorted((root / d).rglob("*")):
            if p.suffix in SUFFIXES and p.is_file():
                yield p


def measure(root):
    files, functions = {}, {}
    for p in sources(root):
        rel = p.relative_to(root).as_posix()
        text = p.read_text(encoding="utf-8")
        files[rel] = text.count("\n")
        for f in lizard.analyze_file.analyze_source_code(rel, text).function_list:
            key = f"{rel}:{f.name}"
            functions[key] = max(functions.get(key, 0), f.length)
    return files, functions


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    listed_path = pathlib.Path(__file__).with_name("long_functions.txt")
    files, functions = measure(root)
    long_now = {k: v for k, v in functions.items() if v > MAX_FUNCTION_LINES}
    if "--update" in sys.argv:
        lines = [f"{n} {k}" for k, n in sorted(long_now.items())]
        header = ("# Functions over 100 lines when this list was made (tests/layering/size_check.py): each may only\n"
                  "# shrink; take one off once it is 100 lines or less. Format: LENGTH PATH:FUNCTION\n")
        listed_path.write_text(header + "\n".join(lines) + "\n")
        print(f"{len(lines)} long functions listed")
        return 0
    listed = {}
    for line in listed_path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            n, key = line.split(" ", 1)
            listed[key] = int(n)
    problems = []
    for rel, n in sorted(files.items()):
        if n > MAX_FILE_LINES:
            problems.append(f"{rel}: {n} lines (at most {MAX_FILE_LINES}: split it)")
    for key, n in sorted(long_now.items()):
        if key not in listed:
            problems.append(f"{key}: {n} lines (at most {MAX_FUNCTION_LINES}: split it into named steps)")
        elif n > listed[key]:
            problems.append(f"{key}: {n} lines, longer than the {listed[key]} it was listed with")
    for key, n in sorted(listed.items()):
        if key not in long_now:
            problems.append(f"{key}: listed in long_functions.txt but now {functions.get(key, 'gone')}"
                            f" lines: take it off the list")
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(functions)} functions; {len(long_now)} over {MAX_FUNCTION_LINES} lines"
          f" (listed {len(listed)}); {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
