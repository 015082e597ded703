#!/usr/bin/env python3
"""Emitter cost: compiles the reference job (examples/llama7b_a100_128.avf)
scaled to growing GPU counts with `aviflowc FILE -o DIR` and prints, per size,
the wall time (min of N runs), peak RSS, the bytes of each artifact, and
whether plan.json still fits a ConfigMap (the Kubernetes targets need it to).

Usage: bench/emit_bench.py [AVIFLOWC] [--gpus 128,1024,4096] [--runs 5]
Prints figures only; it asserts nothing (timings vary with the machine).
"""
import argparse
import pathlib
import re
import resource
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGMAP_LIMIT = 1_000_000  # deploy::kMaxConfigMapPlanBytes


def scaled(source: str, gpus: int) -> str:
    nodes = gpus // 8
    text = re.sub(r"nodes = 16\b", f"nodes = {nodes}", source)
    text = text.replace("gpus = 128", f"gpus = {gpus}")
    # Keep 4 sequences per data rank and micro-batch: batch = data ranks x 4.
    return text.replace("batch = 1024 ", f"batch = {gpus // 8 * 4 * 4} ")


def compile_once(aviflowc: str, job: pathlib.Path, out: pathlib.Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run([aviflowc, str(job), "-o", str(out)], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 and "E0907" not in proc.stderr:
        raise SystemExit(f"aviflowc failed on {gpus_of(job)} GPUs:\n{proc.stderr}")
    return elapsed, proc.returncode


def gpus_of(job: pathlib.Path) -> str:
    return re.search(r"gpus = (\d+)", job.read_text()).group(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("aviflowc", nargs="?", default=str(ROOT / "build/bin/aviflowc"))
    parser.add_argument("--gpus", default="128,1024,2048,4096,8192")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    source = (ROOT / "examples/llama7b_a100_128.avf").read_text()
    print(f"{'GPUs':>6} {'wall ms':>8} {'RSS MB':>7} {'plan.json':>10} {'workflow':>9} {'job':>7} {'configmap':>10}  fits ConfigMap")
    with tempfile.TemporaryDirectory() as tmp:
        for gpus in (int(g) for g in args.gpus.split(",")):
            job = pathlib.Path(tmp) / f"job{gpus}.avf"
            job.write_text(scaled(source, gpus))
            out = pathlib.Path(tmp) / f"out{gpus}"
            times, rc = [], 0
            for _ in range(args.runs):
                elapsed, rc = compile_once(args.aviflowc, job, out)
                times.append(elapsed)
            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            plan = subprocess.run([args.aviflowc, "emit", "plan", str(job)], capture_output=True).stdout
            files = out / "llama7b_pretrain"
            size = lambda name: (files / name).stat().st_size if (files / name).exists() else 0
            fits = "yes" if len(plan) <= CONFIGMAP_LIMIT else "no (E0907: use target = slurm)"
            print(f"{gpus:>6} {min(times) * 1000:>8.1f} {rss:>7.1f} {len(plan):>10,} {size('workflow.yaml'):>9,} "
                  f"{size('job.yaml'):>7,} {size('plan-configmap.yaml'):>10,}  {fits}")


if __name__ == "__main__":
    main()
