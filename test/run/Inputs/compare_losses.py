#!/usr/bin/env python3
"""Compares the losses of two runs' metrics.jsonl, step by step.

  compare_losses.py REFERENCE RUN [--rtol R]

Every step RUN logged must be in REFERENCE with a loss within R (default
1e-5) relative of the reference's; prints the steps compared and the
largest difference, or the first step that differs, and exits 1 then."""
import argparse
import json
import sys


def losses(path):
    out = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "loss" in record:
                out[record["step"]] = record["loss"]
    return out


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("run")
    p.add_argument("--rtol", type=float, default=1e-5)
    a = p.parse_args(argv[1:])
    ref, run = losses(a.reference), losses(a.run)
    if not run:
        print(f"FAIL: {a.run} logs no step")
        return 1
    worst = 0.0
    for step in sorted(run):
        if step not in ref:
            print(f"FAIL: step {step} is not in {a.reference}")
            return 1
        diff = abs(run[step] - ref[step]) / max(abs(ref[step]), 1e-30)
        if diff > a.rtol:
            print(f"FAIL: step {step}: loss {run[step]!r}, reference {ref[step]!r} ({diff:.2e} relative)")
            return 1
        worst = max(worst, diff)
    print(f"ok: steps {min(run)}..{max(run)} match the reference within {a.rtol:g} (largest {worst:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
