#!/usr/bin/python3
"""PyTorch CPU training of the GPT-2 bench/train_cpu trains, the figure the
runtime's CPU step is compared with.

Model: GPT-2 124M (12 layers, hidden 768, 12 heads, MLP 3072, vocabulary
50,257, sequence 256): token and position embeddings, pre-LN blocks with
causal self-attention and a GELU (tanh) MLP, a final LayerNorm, the LM head
tied to the token embedding, cross-entropy. Batch 4 x 256 (the same
synthetic tokens as train_cpu). A step is a full training step: zero the
gradients, forward, backward, clip the gradient's global norm to 1, AdamW
(lr 3e-4, betas 0.9 / 0.95, weight decay 0.1 on the matrices only,
`foreach` multi-tensor update). fp32, and bf16 through
torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's mixed precision:
fp32 parameters, gradients and optimizer, bf16 matmuls).

Each precision runs under every setting tried: each thread count (torch's
default and os.cpu_count(), or `--threads`) with each OpenBLAS core
(`--openblas-cores`; Debian's torch runs its fp32 matmuls through OpenBLAS,
which picks its kernels by CPU model and falls back to generic ones on a CPU
it does not know): by default the environment's OPENBLAS_CORETYPE (if set),
OpenBLAS's own choice (`default`) and, on an AVX-512 CPU, `SkylakeX`
(`Cooperlake` too where AVX-512-BF16 is). OpenBLAS reads its core once, at
load, so each other core runs in a child process of this script. One untimed
warm-up step, then `--steps` timed steps; the best step of the best setting
is the figure. It prints
tokens/s and model FLOP/s with train_cpu's formula (6 x parameters x tokens
plus attention, 12 x layers x T x C per token), the split forward+backward /
optimizer, the peak RSS and the torch version. `--ours BUILD/bin/train_cpu`
runs train_cpu on the same shape and precision afterwards and prints the
ratio of the two. It asserts no timing.

Debian's python3-torch lives in /usr/lib/python3/dist-packages, which only
the system interpreter sees: run it as /usr/bin/python3 bench/torch_cpu.py.
Without torch it says so and exits 0 (so does the ctest entry).

Usage: /usr/bin/python3 bench/torch_cpu.py [--precision fp32|bf16|both]
           [--steps 3] [--layers 12] [--batch 4] [--threads 1,2]
           [--openblas-cores default,SkylakeX] [--ours build/bin/train_cpu] [--quick]
`--quick` (the ctest entry bench/torch_smoke): train_cpu's toy shape (2
layers, hidden 64, 4 heads, vocabulary 500, batch 2 x 15), 1 step, the
environment's OpenBLAS core only.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import subprocess
import sys
import time

FULL = dict(layers=12, hidden=768, heads=12, vocab=50257, seq=256, batch=4, steps=3)
QUICK = dict(layers=2, hidden=64, heads=4, vocab=500, seq=15, batch=2, steps=1)


def import_torch():
    try:
        import torch  # noqa: PLC0415 (optional dependency)
    except ImportError as e:
        print(f"torch_cpu: PyTorch is not importable by {sys.executable} ({e}); nothing measured. "
              "Debian's python3-torch is seen by /usr/bin/python3: run this script with it.")
        return None
    return torch


def build_model(torch, shape):
    nn, F = torch.nn, torch.nn.functional
    c, nh, layers = shape["hidden"], shape["heads"], shape["layers"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
            self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
            self.fc, self.mlp_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

        def attention(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, nh, c // nh).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // nh))
            causal = torch.ones(t, t, dtype=torch.bool).tril()
            att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
            return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))

        def forward(self, x):
            x = x + self.attention(self.ln_1(x))
            return x + self.mlp_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))

    class Gpt2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(shape["vocab"], c), nn.Embedding(shape["seq"], c)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(c)
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    residual = name.endswith("proj.weight")
                    nn.init.normal_(p, 0.0, 0.02 / (math.sqrt(2 * layers) if residual else 1.0))
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, tokens, targets):
            pos = torch.arange(tokens.shape[1])
            x = self.wte(tokens) + self.wpe(pos)
            for block in self.blocks:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # tied LM head
            return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))

    return Gpt2()


def synthetic_batch(torch, shape):
    """train_cpu's batch: token i*7 mod V, target i*11 mod V, row-major."""
    n = shape["batch"] * shape["seq"]
    i = torch.arange(n, dtype=torch.int64)
    view = (shape["batch"], shape["seq"])
    return (i * 7 % shape["vocab"]).view(view), (i * 11 % shape["vocab"]).view(view)


def make_optimizer(torch, model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [dict(params=decay, weight_decay=0.1), dict(params=rest, weight_decay=0.0)]
    return torch.optim.AdamW(groups, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, foreach=True)


def train_step(torch, model, opt, batch, precision):
    """One full step; returns (loss, forward+backward seconds, optimizer seconds)."""
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        loss = model(*batch)
    loss.backward()
    t1 = time.perf_counter()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item(), t1 - t0, time.perf_counter() - t1


def busy_seconds():
    """(seconds all CPUs were busy since boot, this process's CPU seconds)."""
    with open("/proc/stat", encoding="ascii") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    own = resource.getrusage(resource.RUSAGE_SELF)
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK"), own.ru_utime + own.ru_stime


def measure(torch, shape, precision, threads, steps):
    """Best step of one setting: dict with total, fwd_bwd, optimizer, every step."""
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = build_model(torch, shape)
    opt = make_optimizer(torch, model)
    batch = synthetic_batch(torch, shape)
    loss, _, _ = train_step(torch, model, opt, batch, precision)  # warm-up, untimed
    (busy, own), start = busy_seconds(), time.perf_counter()
    runs = [train_step(torch, model, opt, batch, precision) for _ in range(steps)]
    (busy_end, own_end), wall = busy_seconds(), time.perf_counter() - start
    others = max(0.0, (busy_end - busy) - (own_end - own)) / wall
    best = min(runs, key=lambda r: r[1] + r[2])
    params = sum(p.numel() for p in model.parameters())
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return dict(threads=threads, first_loss=loss, fwd_bwd=best[1], optimizer=best[2], total=best[1] + best[2],
                steps=[r[1] + r[2] for r in runs], params=params, others=others, peak_mib=peak_mib)


def flops_per_token(shape, params):
    return 6.0 * params + 12.0 * shape["layers"] * shape["seq"] * shape["hidden"]


def report(shape, precision, results):
    tokens = shape["batch"] * shape["seq"]
    fpt = flops_per_token(shape, results[0]["params"])
    for r in results:
        every = " ".join(f"{s:.2f}" for s in r["steps"])
        print(f"  {precision}, {r['threads']} threads, OpenBLAS core {r['core']}: best of {len(r['steps'])} steps "
              f"{r['total']:.3f} s (forward+backward {r['fwd_bwd']:.3f} s, optimizer {r['optimizer']:.3f} s), "
              f"{tokens / r['total']:.0f} tokens/s, {fpt * tokens / r['total'] / 1e9:.2f} GFLOP/s model; "
              f"every step (s): {every}; first loss {r['first_loss']:.4f}; "
              f"other processes kept {r['others']:.2f} cores busy; peak RSS {r['peak_mib']:.0f} MiB")
    best = min(results, key=lambda r: r["total"])
    print(f"torch (full step, {precision}): best setting {best['threads']} threads, OpenBLAS core {best['core']}, "
          f"{best['total']:.3f} s, {tokens / best['total']:.0f} tokens/s, "
          f"{fpt * tokens / best['total'] / 1e9:.2f} GFLOP/s model, "
          f"optimizer {100 * best['optimizer'] / best['total']:.1f}% of the step ({best['params']} parameters)")
    return tokens / best["total"]


def cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def openblas_cores(args):
    """The OPENBLAS_CORETYPE values to try ('default': unset, OpenBLAS's own choice)."""
    env = os.environ.get("OPENBLAS_CORETYPE")
    if args.openblas_cores:
        return [c.strip() for c in args.openblas_cores.split(",") if c.strip()]
    if args.quick:
        return [env or "default"]
    flags = cpu_flags()
    cores = [env] if env else []
    cores.append("default")
    if "avx512f" in flags:
        cores.append("SkylakeX")
    if "avx512_bf16" in flags:
        cores.append("Cooperlake")
    return list(dict.fromkeys(cores))


RESULT_PREFIX = "torch_cpu result: "


def measure_here_or_in_child(torch, shape, args, precision, threads, core):
    """measure() here when `core` is the one this process's OpenBLAS loaded with, else in a child."""
    if core == os.environ.get("OPENBLAS_CORETYPE", "default"):
        return dict(measure(torch, shape, precision, threads, shape["steps"]), core=core)
    return measure_in_child(args, precision, threads, core)


def measure_in_child(args, precision, threads, core):
    """measure() in a child process whose OpenBLAS loads with `core` (None if the child failed)."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if core != "default":
        env["OPENBLAS_CORETYPE"] = core
    cmd = [sys.executable, os.path.abspath(__file__), "--child", precision, "--threads", str(threads),
           "--steps", str(args.steps), "--layers", str(args.layers), "--batch", str(args.batch)]
    cmd += ["--quick"] if args.quick else []
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return dict(json.loads(line[len(RESULT_PREFIX):]), core=core)
    print(f"  {precision}, {threads} threads, OpenBLAS core {core}: the child failed (exit {done.returncode}): "
          f"{(done.stdout + done.stderr)[-1000:]}")
    return None


OURS_LINE = re.compile(r"ours \(full step, (\w+)\): best of \d+ steps ([\d.]+) s, ([\d.]+) tokens/s")


def run_ours(train_cpu, args, precision):
    """train_cpu's tokens/s on the same shape and precision (None if it failed)."""
    cmd = [train_cpu, "--precision", precision]
    cmd += ["--quick"] if args.quick else ["--layers", str(args.layers), "--batch", str(args.batch),
                                           "--steps", str(args.steps)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    match = OURS_LINE.search(done.stdout)
    if done.returncode != 0 or not match:
        print(f"train_cpu failed (exit {done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return None
    return float(match.group(3))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--precision", choices=["fp32", "bf16", "both"], default="both")
    p.add_argument("--steps", type=int)
    p.add_argument("--layers", type=int)
    p.add_argument("--batch", type=int)
    p.add_argument("--threads", help="comma-separated thread counts (default: torch's default and cpu_count)")
    p.add_argument("--openblas-cores", help="comma-separated OPENBLAS_CORETYPE values, 'default' for unset")
    p.add_argument("--ours", help="train_cpu binary to run on the same shape, for the ratio")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--child", choices=["fp32", "bf16"], help=argparse.SUPPRESS)
    args = p.parse_args()
    for key in ("steps", "layers", "batch"):
        if getattr(args, key) is not None and getattr(args, key) < 1:
            p.error(f"--{key} must be at least 1")
    try:
        args.thread_counts = [int(t) for t in args.threads.split(",")] if args.threads else None
    except ValueError:
        p.error(f"--threads takes comma-separated whole numbers, not '{args.threads}'")
    if args.thread_counts is not None and min(args.thread_counts, default=0) < 1:
        p.error(f"--threads takes counts of at least 1, not '{args.threads}'")
    return args


def main():
    args = parse_args()
    shape = dict(QUICK if args.quick else FULL)
    for key in ("steps", "layers", "batch"):
        if getattr(args, key) is not None and not args.quick:
            shape[key] = getattr(args, key)
    args.steps, args.layers, args.batch = shape["steps"], shape["layers"], shape["batch"]
    torch = import_torch()
    if torch is None:
        return 0
    if args.child:
        result = measure(torch, shape, args.child, args.thread_counts[0], shape["steps"])
        print(RESULT_PREFIX + json.dumps(result))
        return 0
    threads = args.thread_counts or sorted({torch.get_num_threads(), os.cpu_count() or 1})
    cores = openblas_cores(args)
    print(f"torch {torch.__version__} (python {sys.version.split()[0]}, {sys.executable}); "
          f"{os.cpu_count()} CPUs; oneDNN (mkldnn) {torch.backends.mkldnn.is_available()}; "
          f"OPENBLAS_CORETYPE {os.environ.get('OPENBLAS_CORETYPE', 'unset')}")
    print(f"GPT-2: {shape['layers']} layers, hidden {shape['hidden']}, vocabulary {shape['vocab']}, "
          f"batch {shape['batch']} x seq {shape['seq']}; threads tried: {threads}; OpenBLAS cores tried: {cores}")
    precisions = ["fp32", "bf16"] if args.precision == "both" else [args.precision]
    failed = False
    for precision in precisions:
        results = [measure_here_or_in_child(torch, shape, args, precision, n, core) for core in cores for n in threads]
        failed |= any(r is None for r in results)
        results = [r for r in results if r is not None]
        if not results:
            continue
        theirs = report(shape, precision, results)
        if args.ours:
            ours = run_ours(args.ours, args, precision)
            if ours is not None:
                print(f"train_cpu (full step, {precision}): {ours:.0f} tokens/s, {ours / theirs:.2f}x torch's")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
