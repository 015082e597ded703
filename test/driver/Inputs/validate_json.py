"""Checks that every line of a file is a JSON diagnostic object."""
import json
import sys

lines = open(sys.argv[1]).read().splitlines()
assert lines, "no diagnostics"
for line in lines:
    d = json.loads(line)
    for key in ("severity", "code", "message", "location", "ranges", "notes", "help", "fixits"):
        assert key in d, f"missing {key}: {line}"
    assert d["severity"] in ("error", "warning"), line
print(f"{len(lines)} JSON diagnostics")
