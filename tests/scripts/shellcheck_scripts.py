#!/usr/bin/env python3
"""Lints every shell script of the repository with shellcheck (warnings and errors): most of them run only on a GPU
machine, where a slip costs a device call; here it fails CI instead.

    shellcheck_scripts.py REPO_ROOT
"""
import pathlib
import shutil
import subprocess
import sys


def shell_scripts(root: pathlib.Path) -> list[pathlib.Path]:
    """Files under scripts/ and .ci/ with a bash shebang, the sourced scripts/lib/*.sh, and bench/sweeps/*.sh."""
    found = []
    for path in sorted([*root.glob("scripts/*"), *root.glob(".ci/*")]):
        if path.is_file():
            with path.open("rb") as f:
                if b"bash" in f.readline():
                    found.append(path)
    found += sorted(root.glob("scripts/lib/*.sh")) + sorted(root.glob("bench/sweeps/*.sh"))
    return found


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    checker = shutil.which("shellcheck")
    if checker is None:
        print("shellcheck_scripts: shellcheck not found (scripts/setup installs Debian's shellcheck)", file=sys.stderr)
        return 1
    scripts = shell_scripts(root)
    if not scripts:
        print(f"shellcheck_scripts: no shell scripts under {root}", file=sys.stderr)
        return 1
    # -s bash: the sourced files in scripts/lib have no shebang.
    run = subprocess.run([checker, "-s", "bash", "-S", "warning", "-f", "gcc", *map(str, scripts)],
                         cwd=root, capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr, end="")
        print(f"shellcheck_scripts: warnings in the scripts above ({len(scripts)} checked)", file=sys.stderr)
        return 1
    print(f"shellcheck_scripts: {len(scripts)} scripts, no warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
