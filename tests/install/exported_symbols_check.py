#!/usr/bin/env python3
"""The shared library exports exactly the public API: `nm -DC --defined-only LIB` lists the symbols of
tests/install/exported_symbols.txt (the C API's tf* functions and the tileforge:: declarations of include/), no
more and no fewer. A new public function is added to the list in the same commit; anything else exported is a leak
of the library's insides.

    exported_symbols_check.py LIB EXPECTED
"""
import subprocess
import sys


def main():
    lib, expected = sys.argv[1], sys.argv[2]
    out = subprocess.run(["nm", "-DC", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    # "0000000000012345 T tileforge::version()": the name is everything after the address and the type.
    got = sorted({line.split(" ", 2)[2] for line in out.splitlines() if line.count(" ") >= 2})
    want = sorted({line.strip() for line in open(expected) if line.strip()})
    extra = [s for s in got if s not in want]
    missing = [s for s in want if s not in got]
    for s in extra:
        print(f"exported but not public: {s}")
    for s in missing:
        print(f"public but not exported: {s}")
    bad = [s for s in got if not (s.startswith("tf") or s.startswith("tileforge::"))]
    for s in bad:
        print(f"neither tf* nor tileforge::: {s}")
    ok = not extra and not missing and not bad
    print(f"{len(got)} exported symbols, {'1 passed, 0 failed' if ok else '0 passed, 1 failed'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
