#!/usr/bin/env python3
"""Reads `aviflowc plan --format=json` output (one JSON object per job and
line) from standard input and checks its shape.

Usage: plan_json.py [--gpus N] [--alternatives N] [--same-layout FILE] [--no-ties]
  --gpus N          the chosen layout's data x tensor x pipeline must be N
  --alternatives N  exactly N alternatives
  --chosen-is-best-of FILE
                    the chosen layout must equal the first alternative of the
                    (single-job) plan JSON in FILE: all-`auto` picks the
                    fastest layout of the whole space
  --no-ties         no two of the chosen layout and the alternatives have the
                    same step time and memory (plan leaves such ties out)
Prints `ok: JOB` per job; exits 1 with a message on the first problem.
"""
import json
import sys

LAYOUT = {"data": int, "tensor": int, "pipeline": int, "virtual_stages": int, "schedule": str, "zero": int,
          "micro_batch": int, "recompute": str, "sequence_parallel": bool}
PREDICTED = {"memory_per_gpu_bytes": (int, float), "step_time_s": (int, float), "step_time_low_s": (int, float),
             "step_time_high_s": (int, float), "tokens_per_s": (int, float),
             "tflops_per_gpu": (int, float), "mfu": (int, float), "fits": bool, "binding": str,
             "memory_breakdown_bytes": dict}
BREAKDOWN = ["weights", "gradients", "optimizer", "activations", "buffers"]


def fail(message):
    print("error: " + message)
    sys.exit(1)


def check_keys(obj, schema, where):
    if not isinstance(obj, dict):
        fail(f"{where} is not an object")
    for key, kind in schema.items():
        if key not in obj:
            fail(f"{where} has no `{key}`")
        value = obj[key]
        # bool is an int in Python: keep them apart.
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            fail(f"{where}.{key} is not an integer: {value!r}")
        if kind is not int and not isinstance(value, kind):
            fail(f"{where}.{key} has the wrong type: {value!r}")


def check_candidate(c, where):
    check_keys(c.get("layout"), LAYOUT, where + ".layout")
    check_keys(c.get("predicted"), PREDICTED, where + ".predicted")
    p = c["predicted"]
    parts = p["memory_breakdown_bytes"]
    for key in BREAKDOWN:
        if key not in parts:
            fail(f"{where}.predicted.memory_breakdown_bytes has no `{key}`")
    if abs(sum(parts[k] for k in BREAKDOWN) - p["memory_per_gpu_bytes"]) > len(BREAKDOWN):
        fail(f"{where}: the memory breakdown does not add up to memory_per_gpu_bytes")
    if not p["fits"]:
        fail(f"{where} does not fit")
    if not (0 < p["mfu"] <= 1) or p["step_time_s"] <= 0 or p["tokens_per_s"] <= 0:
        fail(f"{where}: implausible predictions {p}")
    if not 0 < p["step_time_low_s"] <= p["step_time_s"] <= p["step_time_high_s"]:
        fail(f"{where}: the step time is not inside its likely range {p}")
    l = c["layout"]
    for key in ("data", "tensor", "pipeline", "virtual_stages", "micro_batch"):
        if l[key] < 1:
            fail(f"{where}.layout.{key} = {l[key]}")
    if not 0 <= l["zero"] <= 3:
        fail(f"{where}.layout.zero = {l['zero']}")


def main():
    args = sys.argv[1:]
    flags = [a for a in args if a == "--no-ties"]
    options = dict(zip([a for a in args if a not in flags][::2], [a for a in args if a not in flags][1::2]))
    lines = [line for line in sys.stdin.read().splitlines() if line.strip()]
    if not lines:
        fail("no output")
    for n, line in enumerate(lines, 1):
        plan = json.loads(line)
        job = plan.get("job")
        if not isinstance(job, str):
            fail(f"line {n} has no `job`")
        check_candidate(plan, job)
        alternatives = plan.get("alternatives")
        if not isinstance(alternatives, list):
            fail(f"{job} has no `alternatives` list")
        for i, alt in enumerate(alternatives):
            check_candidate(alt, f"{job}.alternatives[{i}]")
            if alt["layout"] == plan["layout"]:
                fail(f"{job}.alternatives[{i}] repeats the chosen layout")
        if "--alternatives" in options and len(alternatives) != int(options["--alternatives"]):
            fail(f"{job} has {len(alternatives)} alternatives, expected {options['--alternatives']}")
        if not isinstance(plan.get("candidates_evaluated"), int) or plan["candidates_evaluated"] < 1:
            fail(f"{job} has no `candidates_evaluated`")
        totals = plan.get("totals")
        for key in ("steps", "tokens", "seconds", "seconds_low", "seconds_high", "step_seconds", "staging_seconds",
                    "checkpoint_seconds", "gpu_hours"):
            if not isinstance(totals, dict) or key not in totals:
                fail(f"{job}.totals has no `{key}`")
        parts = totals["step_seconds"] + totals["staging_seconds"] + totals["checkpoint_seconds"]
        if abs(totals["seconds"] - parts) > 1e-9 * max(parts, 1):
            fail(f"{job}.totals.seconds is not the steps, staging and checkpoints together")
        if not totals["seconds_low"] <= totals["seconds"] <= totals["seconds_high"]:
            fail(f"{job}.totals.seconds is not inside its likely range")
        if ("cost" in totals) != ("currency" in totals):
            fail(f"{job}.totals has a cost without a currency, or a currency without a cost")
        if "--no-ties" in args:
            rows = [plan] + alternatives
            figures = [(r["predicted"]["step_time_s"], r["predicted"]["memory_per_gpu_bytes"]) for r in rows]
            if len(set(figures)) != len(figures):
                fail(f"{job}: two rows have the same step time and memory")
        l = plan["layout"]
        if "--gpus" in options and l["data"] * l["tensor"] * l["pipeline"] != int(options["--gpus"]):
            fail(f"{job}: data {l['data']} x tensor {l['tensor']} x pipeline {l['pipeline']} != {options['--gpus']}")
        if "--chosen-is-best-of" in options:
            with open(options["--chosen-is-best-of"]) as f:
                other = json.loads(f.readline())
            if not other["alternatives"] or other["alternatives"][0]["layout"] != l:
                fail(f"{job}: chosen {l} is not the best layout of the whole space in {options['--chosen-is-best-of']}")
        print(f"ok: {job}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
