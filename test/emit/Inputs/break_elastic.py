#!/usr/bin/env python3
"""Writes a copy of an elastic plan.json with one rule of its `elastic`
section broken, for avf-run check-plan to refuse.

  break_elastic.py PLAN HOW > OUT

HOW: degrees (data x tensor x pipeline not the count's GPUs), batch (micro-
batches that do not make the global batch), chunks (a chunk of layers
missing), order (two counts swapped), own (the plan's own count's layout
changed), missing (the key removed)."""
import json
import sys


def main(argv):
    plan = json.load(open(argv[1]))
    how = argv[2]
    layouts = plan["elastic"]["layouts"]
    if how == "degrees":
        layouts[0]["data"] += 1
    elif how == "batch":
        layouts[0]["micro_batches_per_step"] += 1
    elif how == "chunks":
        layouts[0]["chunk_layers"] = layouts[0]["chunk_layers"][:-1]
    elif how == "order":
        layouts[0], layouts[1] = layouts[1], layouts[0]
    elif how == "own":
        own = next(l for l in layouts if l["nodes"] == plan["hardware"]["nodes"])
        own["zero"] = 3 - own["zero"]
    elif how == "missing":
        del plan["elastic"]
    else:
        raise SystemExit(f"unknown way to break the plan: {how}")
    json.dump(plan, sys.stdout, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
