#!/usr/bin/env python3
"""The steps of tools/device-check.sh on a machine with one NVIDIA GPU.

1. The test binaries: the kernel contract on the CUDA backend, the kernel
   launchers, NCCL with one rank, the engine's GPU rows of the equivalence
   matrix (several ranks sharing the GPU over TCP). A step passes when its binary exits 0 and
   none of its tests skipped: on the GPU machine a skip means the GPU was not
   used.
2. The tiny GPT-2 (the README's example, in bf16) trained by avf-run on the
   CPU and on the GPU from the same seed: every step's loss on the GPU within
   2% of the CPU's (the bf16 layouts' bound), and the loss falling.
3. The bench: GPT-2 124M, GPT-2 350M and a Llama-style 1.5B (bench/gpu/, T =
   1024, bf16, one micro-batch of 8) trained by avf-run on the GPU over
   random tokens: tokens/s and MFU (the median step after two warm-up steps;
   MFU = the plan's FLOPs per token x tokens/s / 989 TFLOP/s, dense bf16 of an
   H100/H200), the process's peak GPU memory (nvidia-smi, polled) and the
   bytes avf-run held against the planner's prediction (its memory report),
   and the same model trained by plain PyTorch (bench/torch_gpu.py) for the
   ratio. The figures are reported, not asserted: the step fails only when a
   run fails. Targets: 35%, 45% and 50% MFU, at least PyTorch's tokens/s.
What one GPU cannot check is listed as not covered, with the reason, so the
JSON says what the run did not cover. Writes RESULTS/device-check.json
and RESULTS/device-check.log.
"""
import argparse
import array
import glob
import json
import os
import platform
import random
import subprocess
import sys
import threading
import time

# (name, binary, gtest filter, timeout in seconds, what it checks)
STEPS = [
    ("kernel_contract", "avf_kernel_contract_cuda_tests", "*", 240,
     "every backend kernel on the GPU, fp32 and bf16, against the fp64 CPU kernels"),
    ("kernels", "avf_kernels_tests", "*-Kernels.WithoutADeviceALaunchFailsWithCudasReason", 60,
     "the GELU and AdamW launchers against the CPU"),
    ("nccl_one_rank", "avf_comm_nccl_tests", "NcclInfo.*:NcclOneRank.*", 240,
     "NCCL on the device: one rank, every collective, splits, refusals and timeouts"),
    ("equivalence_matrix_gpu", "avf_engine_tests", "Gpu/*", 300,
     "the engine's data, tensor, pipeline and ZeRO rows with every rank on the GPU against one rank on it"),
]
NOT_COVERED = [
    ("nccl_training_multi_gpu", "ranks on several GPUs train over NCCL; one GPU runs NCCL with one rank only (NCCL "
     "refuses two ranks on one GPU), so the engine's NCCL path is checked on the CPU (unit/engine's device-memory "
     "rows) and here only through one-rank NCCL"),
]
PEAK_FLOPS = 989e12
BENCH = [("gpt2_124m", 0.35), ("gpt2_350m", 0.45), ("llama_1b", 0.50)]


def cuda_library_dirs():
    """The CUDA toolkit's libraries, and those of NVIDIA's Python wheels."""
    dirs = [d for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/lib") if os.path.isdir(d)]
    for site in sys.path:
        dirs += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
        dirs += sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "lib")))
    return list(dict.fromkeys(dirs))


def machine():
    info = {"host": platform.node(), "cpus": os.cpu_count()}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        info["gpus"] = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    except (OSError, subprocess.TimeoutExpired) as e:
        info["gpus"] = []
        info["nvidia_smi"] = str(e)
    return info


def gtest_counts(report_path):
    """(tests, failures, skipped) from a gtest JSON report, or None."""
    try:
        with open(report_path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        return None
    tests = failures = skipped = 0
    for suite in report.get("testsuites", []):
        for case in suite.get("testsuite", []):
            tests += 1
            failures += 1 if case.get("failures") else 0
            skipped += 1 if case.get("result") == "SKIPPED" else 0
    return tests, failures, skipped


def run_step(step, args, env, log):
    name, binary, gtest_filter, timeout, checks = step
    path = os.path.join(args.bin, binary)
    report = os.path.join(args.results, name + ".gtest.json")
    result = {"name": name, "checks": checks}
    if not os.access(path, os.X_OK):
        return {**result, "status": "failed", "detail": f"{path} is missing"}
    command = [path, f"--gtest_filter={gtest_filter}", f"--gtest_output=json:{report}"]
    log.write(f"\n==== {name}: {' '.join(command)}\n")
    log.flush()
    start = time.monotonic()
    try:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout)
        status = done.returncode
    except subprocess.TimeoutExpired:
        status = None
    result["seconds"] = round(time.monotonic() - start, 1)
    counts = gtest_counts(report)
    if counts:
        result["tests"], result["failures"], result["skipped"] = counts
    if status is None:
        return {**result, "status": "failed", "detail": f"timed out after {timeout} s"}
    if status != 0:
        return {**result, "status": "failed", "detail": f"exit status {status} (see device-check.log)"}
    if counts is None:
        return {**result, "status": "failed", "detail": "no gtest report: the binary did not start its tests"}
    if counts[2]:
        return {**result, "status": "failed", "detail": f"{counts[2]} test(s) skipped: the GPU was not used"}
    return {**result, "status": "passed"}


def bundle(args, *parts):
    return os.path.join(args.bin, "..", *parts)


def avf_run(args, env, log, plan, device, data, run_dir, steps, timeout):
    """Trains `steps` steps; (exit status or None on timeout, losses, metrics)."""
    command = [os.path.join(args.bin, "avf-run"), "--plan", plan, "--device", device, "--data-dir", data,
               "--run-dir", run_dir, "--resume", "never", "--max-steps", str(steps)]
    log.write(f"\n==== {' '.join(command)}\n")
    log.flush()
    try:
        status = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        status = None
    metrics = []
    path = os.path.join(run_dir, "metrics.jsonl")
    if os.path.exists(path):
        metrics = [json.loads(line) for line in open(path) if line.strip()]
    return status, metrics


def tiny_step(args, env, log):
    result = {"name": "tiny_gpt2_bf16_gpu", "checks": "the tiny GPT-2 in bf16: GPU losses within 2% of the CPU's"}
    curves = {}
    for device in ("cpu", "gpu"):
        status, metrics = avf_run(args, env, log, bundle(args, "plans", "tiny_bf16.json"), device,
                                  bundle(args, "data", "toy-corpus"), os.path.join(args.results, "tiny_" + device),
                                  60, 180)
        if status != 0:
            return {**result, "status": "failed", "detail": f"avf-run --device {device}: exit {status}"}
        curves[device] = [m["loss"] for m in metrics]
    cpu, gpu = curves["cpu"], curves["gpu"]
    worst = max((abs(g - c) / c for c, g in zip(cpu, gpu)), default=float("inf"))
    result.update({"cpu_losses": cpu, "gpu_losses": gpu, "worst_relative": worst})
    if len(cpu) != 60 or len(gpu) != 60:
        return {**result, "status": "failed", "detail": f"{len(cpu)} and {len(gpu)} steps, not 60"}
    if worst > 0.02 or not gpu[-1] < gpu[0] - 0.5:
        return {**result, "status": "failed", "detail": f"worst step {worst:.4f} apart, loss {gpu[0]:.3f} -> {gpu[-1]:.3f}"}
    return {**result, "status": "passed"}


def random_shards(folder, data, vocab):
    """The plan's dataset as random tokens below `vocab` (docs/data-format.md), made once."""
    tokens, shards, token_bytes = data["tokens"], data["shards"], data["token_bytes"]
    rng = random.Random(1234)
    for i in range(shards):
        path = os.path.join(folder, f"shard_{i:06d}.bin")
        count = tokens // shards + (tokens % shards if i == shards - 1 else 0)
        if os.path.exists(path):
            continue
        os.makedirs(folder, exist_ok=True)
        header = array.array("I", [0] * 256)
        header[0], header[1], header[2] = 0x54465641, 1, token_bytes
        header[4], header[5] = count & 0xFFFFFFFF, count >> 32
        body = array.array("H" if token_bytes == 2 else "I", (rng.randrange(vocab) for _ in range(count)))
        with open(path, "wb") as f:
            f.write(header.tobytes())
            f.write(body.tobytes())


def gpu_memory_poller(stop, peak):
    """Polls nvidia-smi for the largest memory any compute process uses (MiB)."""
    while not stop.is_set():
        try:
            out = subprocess.run(["nvidia-smi", "--query-compute-apps=used_memory", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10).stdout
            for line in out.split():
                peak[0] = max(peak[0], int(line))
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return
        stop.wait(0.2)


def bench_step(args, env, log, model, target_mfu):
    plan_path = bundle(args, "plans", model + ".json")
    plan = json.load(open(plan_path))
    data = os.path.join(args.results, "random_" + model)
    random_shards(data, plan["data"], plan["model"]["vocab"])
    run_dir = os.path.join(args.results, "bench_" + model)
    stop, peak = threading.Event(), [0]
    poller = threading.Thread(target=gpu_memory_poller, args=(stop, peak))
    poller.start()
    status, metrics = avf_run(args, env, log, plan_path, "gpu", data, run_dir, 12, 300)
    stop.set()
    poller.join()
    result = {"name": "bench_" + model, "checks": f"{model}: tokens/s, MFU (target {target_mfu:.0%}), memory"}
    if status != 0 or len(metrics) < 4:
        return {**result, "status": "failed", "detail": f"avf-run exit {status} after {len(metrics)} steps"}
    timed = sorted(metrics[2:], key=lambda m: m["tokens_per_s"])
    middle = timed[len(timed) // 2]
    result.update({"tokens_per_s": middle["tokens_per_s"], "mfu": middle["flops_per_s"] / PEAK_FLOPS,
                   "target_mfu": target_mfu, "peak_gpu_memory_bytes": peak[0] << 20,
                   "predicted_memory_per_gpu_bytes": plan["predicted"]["memory_per_gpu_bytes"]})
    report = os.path.join(run_dir, "memory_rank_00000.json")
    if os.path.exists(report):
        result["memory_report"] = json.load(open(report))
    result["pytorch"] = torch_reference(env, log, model)
    if result["pytorch"].get("tokens_per_s"):
        result["ratio_to_pytorch"] = result["tokens_per_s"] / result["pytorch"]["tokens_per_s"]
    return {**result, "status": "passed"}


def torch_reference(env, log, model):
    command = [sys.executable, os.path.join(os.path.dirname(__file__), "..", "bench", "torch_gpu.py"),
               "--models", model, "--batch", "8", "--seq", "1024"]
    log.write(f"\n==== {' '.join(command)}\n")
    log.flush()
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 300 s"}
    log.write(done.stdout + done.stderr)
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    return {"error": f"exit {done.returncode}, no figures (see device-check.log)"}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--lib", default="")
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    env = dict(os.environ)
    paths = ([args.lib] if args.lib else []) + cuda_library_dirs()
    env["LD_LIBRARY_PATH"] = ":".join(paths + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    commit_file = os.path.join(args.bin, "..", "commit")
    summary = {"machine": machine(), "library_path": env["LD_LIBRARY_PATH"], "steps": []}
    if os.path.exists(commit_file):
        summary["commit"] = open(commit_file).read().strip()
    with open(os.path.join(args.results, "device-check.log"), "w") as log:
        for step in STEPS:
            result = run_step(step, args, env, log)
            summary["steps"].append(result)
            print(f"device-check: {result['name']}: {result['status']}"
                  + (f" ({result['detail']})" if "detail" in result else ""), flush=True)
        if os.path.isdir(os.path.join(args.bin, "..", "plans")):
            runs = [lambda: tiny_step(args, env, log)] + [
                lambda m=m, t=t: bench_step(args, env, log, m, t) for m, t in BENCH]
            for run in runs:
                result = run()
                summary["steps"].append(result)
                print(f"device-check: {result['name']}: {result['status']}"
                      + (f" ({result['detail']})" if "detail" in result else ""), flush=True)
        else:
            result = {"name": "training", "status": "failed",
                      "detail": "no plans here: run the bundle of tools/device-bundle.sh"}
            summary["steps"].append(result)
            print(f"device-check: training: failed ({result['detail']})", flush=True)
    for name, why in NOT_COVERED:
        summary["steps"].append({"name": name, "status": "not_covered", "detail": why})
        print(f"device-check: {name}: not covered ({why})")
    summary["passed"] = all(s["status"] == "passed" for s in summary["steps"] if s["status"] != "not_covered")
    with open(os.path.join(args.results, "device-check.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
