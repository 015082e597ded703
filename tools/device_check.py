#!/usr/bin/env python3
"""The steps of tools/device-check.sh, each a test binary run on the GPU.

A step passes when its binary exits 0 and none of its tests skipped: on the
GPU machine a skip means the GPU was not used. Steps that avf-run cannot do
yet are listed as not built, with the reason, so the JSON says what the run
did not cover. Writes RESULTS/device-check.json and RESULTS/device-check.log.
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import time

# (name, binary, gtest filter, timeout in seconds, what it checks)
STEPS = [
    ("kernel_contract", "avf_kernel_contract_cuda_tests", "*", 240,
     "every backend kernel on the GPU, fp32 and bf16, against the fp64 CPU kernels"),
    ("kernels", "avf_kernels_tests", "*-Kernels.WithoutADeviceALaunchFailsWithCudasReason", 60,
     "the GELU and AdamW launchers against the CPU"),
    ("nccl_one_rank", "avf_comm_nccl_tests", "NcclInfo.*:NcclOneRank.*", 240,
     "NCCL on the device: one rank, every collective, splits, refusals and timeouts"),
]
NOT_BUILT = [
    ("equivalence_matrix_gpu", "the engine does not run on GPUs yet: avf-run trains on CPUs only"),
    ("tiny_gpt2_bf16_gpu", "the engine does not run on GPUs yet"),
    ("bench_gpu", "the engine does not run on GPUs yet: no tokens/s or MFU to measure"),
]


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
    for name, why in NOT_BUILT:
        summary["steps"].append({"name": name, "status": "not_built", "detail": why})
        print(f"device-check: {name}: not built ({why})")
    summary["passed"] = all(s["status"] == "passed" for s in summary["steps"] if s["status"] != "not_built")
    summary["complete"] = not NOT_BUILT
    with open(os.path.join(args.results, "device-check.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
