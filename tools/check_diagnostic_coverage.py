#!/usr/bin/env python3
"""Fails when a diagnostic code in compiler/diag/diagnostic_kinds.def is not
named by any lit test (as `[E0123]` in an expected-* comment or a CHECK line).

Usage: check_diagnostic_coverage.py SOURCE_ROOT
"""
import pathlib
import re
import sys


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    registry = (root / "compiler" / "diag" / "diagnostic_kinds.def").read_text()
    codes = re.findall(r'^DIAG\(\w+, "([EW]\d{4})"', registry, re.MULTILINE)
    if not codes:
        print("error: no DIAG entries found in the registry")
        return 1
    duplicates = sorted({c for c in codes if codes.count(c) > 1})
    if duplicates:
        print("error: codes registered twice: " + ", ".join(duplicates))
        return 1
    mentioned = set()
    for path in (root / "test").rglob("*"):
        if path.suffix in (".avf", ".test") and path.name != "registry_coverage.test":
            mentioned.update(re.findall(r"\[([EW]\d{4})\]", path.read_text(errors="replace")))
    missing = [c for c in codes if c not in mentioned]
    for code in missing:
        print(f"error: no lit test reaches diagnostic {code}")
    print(f"{len(codes) - len(missing)} of {len(codes)} diagnostic codes are covered by lit tests")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
