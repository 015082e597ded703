#!/usr/bin/env python3
"""Checks that the ConfigMap in a plan-configmap.yaml carries files unchanged.

  configmap_files.py PLAN_CONFIGMAP_YAML DIR NAME...

Exits 1 naming each NAME whose data differs from DIR/NAME's bytes.
"""
import os
import sys

import yaml


def main(argv):
    docs = [d for d in yaml.safe_load_all(open(argv[1])) if d and d["kind"] == "ConfigMap"]
    data = docs[0]["data"]
    bad = [n for n in argv[3:] if data.get(n) != open(os.path.join(argv[2], n)).read()]
    for n in bad:
        print(f"{n}: not the same as {os.path.join(argv[2], n)}" if n in data else f"{n}: not in the ConfigMap")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
