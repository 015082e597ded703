"""Trains a job under several layouts for 2 steps each with `aviflowc run
--local` and compares what each rank held (RUN_DIR/memory_rank_N.json) with
the planner's prediction in plan.json: for each layout and category (weights,
gradients, optimizer, activations) the largest rank's bytes over the
prediction (the planner predicts the largest stage). Prints one row per
layout and exits 1 when a ratio is outside [0.8, 1.2].

usage: memory_table.py AVIFLOWC AVF_RUN JOB.avf WORK_DIR
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

# data, tensor, pipeline, zero, extra parallel fields
LAYOUTS = [
    (1, 1, 1, 0, ""), (2, 1, 1, 0, ""), (2, 1, 1, 1, ""), (2, 1, 1, 2, ""), (2, 1, 1, 3, ""),
    (1, 2, 1, 0, ""), (1, 2, 1, 0, "sequence_parallel = true;"), (1, 4, 1, 0, ""),
    (1, 1, 2, 0, ""), (1, 1, 2, 0, "schedule = gpipe;"), (1, 2, 2, 0, ""), (2, 1, 2, 3, ""), (2, 2, 1, 2, ""),
]
CATEGORIES = ["weights", "gradients", "optimizer", "activations"]


def job_text(base, d, t, p, z, extra):
    text = re.sub(r"gpus = \d+", f"gpus = {d * t * p}", base)
    fields = f"data = {d}; tensor = {t}; pipeline = {p}; zero = {z}; {extra}"
    return re.sub(r"data = \d+; tensor = \d+; pipeline = \d+; zero = \d+;", fields, text)


def main():
    aviflowc, avf_run, job, work = sys.argv[1:5]
    base = open(job).read()
    env = dict(os.environ, AVIFLOW_AVF_RUN=avf_run)
    worst = 0.0
    for d, t, p, z, extra in LAYOUTS:
        name = f"D{d} T{t} P{p} zero {z} {extra}".strip()
        path = os.path.join(os.path.dirname(job), "layout.avf")
        with open(path, "w") as f:
            f.write(job_text(base, d, t, p, z, extra))
        run = os.path.join(work, "layout")
        shutil.rmtree(run, ignore_errors=True)
        shutil.rmtree(os.path.join(os.path.dirname(job), "data", "ckpt"), ignore_errors=True)
        done = subprocess.run([aviflowc, "run", path, "--local", "--run-dir", run, "--max-steps", "2"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            print(f"{name}: the run failed: {done.stderr[-500:]}")
            return 1
        ranks = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(run, "memory_rank_*.json")))]
        predicted = ranks[0]["predicted"]
        cells = []
        for c in CATEGORIES:
            ratio = max(r[c] for r in ranks) / predicted[c]
            worst = max(worst, abs(ratio - 1.0))
            cells.append(f"{c} {ratio:.2f}")
        print(f"{name}: " + "  ".join(cells))
    print(f"largest deviation from the planner: {worst:.0%}")
    return 0 if worst <= 0.2 else 1


sys.exit(main())
