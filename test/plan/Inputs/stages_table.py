#!/usr/bin/env python3
"""Prints the `stages` rows of a plan.json read from standard input, one line
each: `stage S chunk C: layers FIRST..LAST` and `embedding` / `output` where set.

Usage: stages_table.py < plan.json
"""
import json
import sys

for row in json.load(sys.stdin)["stages"]:
    roles = [name for name in ("embedding", "output") if row[name]]
    last = row["first_layer"] + row["layers"] - 1
    print(f"stage {row['stage']} chunk {row['chunk']}: layers {row['first_layer']}..{last}", *roles)
