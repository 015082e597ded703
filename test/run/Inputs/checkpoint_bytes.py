"""Checks a committed checkpoint against the plan that wrote it: one data file
per rank, listed in index.json with its size, and every parameter of the
model saved once, with both AdamW moments (3 x 4 bytes per parameter in all,
whatever the layout). Prints the files' sizes.

Usage: checkpoint_bytes.py PLAN_JSON STEP_DIR
"""
import json
import os
import sys


def main():
    plan = json.load(open(sys.argv[1]))
    step_dir = sys.argv[2]
    index = json.load(open(os.path.join(step_dir, "index.json")))
    ranks = plan["training"]["gpus"]
    names = [f["name"] for f in index["files"]]
    assert names == ["rank_%05d.bin" % r for r in range(ranks)], names
    sizes = [os.path.getsize(os.path.join(step_dir, n)) for n in names]
    assert sizes == [f["bytes"] for f in index["files"]], (sizes, index["files"])
    parameters = plan["model"]["parameters"]
    held = sum(t["rows"] * t["cols"] for t in index["tensors"] if t["name"].startswith("param/"))
    assert held == parameters, (held, parameters)
    assert sum(sizes) == 12 * parameters, (sum(sizes), parameters)
    print("checkpoint of", parameters, "parameters in", ranks, "files:", *sizes)


if __name__ == "__main__":
    main()
