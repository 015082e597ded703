#!/usr/bin/python3
"""PyTorch training on one NVIDIA GPU of the models the runtime's GPU bench
trains: the reference tokens/s its figures are divided by.

Models (`--models`, default all three; sequence 1024): gpt2_124m (12 layers,
hidden 768, 12 heads, MLP 3072) and gpt2_350m (24, 1024, 16, 4096), both with
vocabulary 50,257, learned positions, pre-LN LayerNorm (eps 1e-5), GELU
(tanh), biases, the LM head tied to the token embedding; llama_1b (16 layers,
hidden 2048, 32 heads, 8 key/value heads, SwiGLU MLP 8192 with gate and up in
one matrix, RMSNorm eps 1e-5, RoPE theta 500,000, vocabulary 128,256, untied
LM head, no biases). Attention: F.scaled_dot_product_attention(is_causal=
True); GQA by enable_gqa=True from torch 2.5 on bf16 CUDA tensors (which
FlashAttention takes; elsewhere it would run unfused), else repeat_interleave.
Loss: cross-entropy on the logits.

A step, on `--batch` x `--seq` tokens (default 8 x 1024, no accumulation):
forward under torch.autocast("cuda", dtype=torch.bfloat16) with fp32
parameters, backward, clip the global gradient norm to 1, torch.optim.AdamW
(lr 3e-4, betas 0.9 / 0.95, weight decay 0.1 on matrices only, fused=True),
zero_grad(set_to_none=True). The model is torch.compile'd unless
`--no-compile`; if compiling fails, the reason goes to stderr and it runs
eager. Tokens and targets: torch.randint on the device, fixed seed, one batch
reused. `--warmup` untimed steps (default 3, compilation included), then
`--steps` timed steps (default 10), each between torch.cuda.synchronize()
calls. Each model is freed (its objects dropped, gc, compile caches reset,
empty_cache, reset_peak_memory_stats) before the next.

Stdout: one JSON line per model: model, params (every trainable parameter,
embeddings and LM head included, a tied matrix once: 124,439,808,
354,823,168 and 1,498,482,688 at full size), batch, seq, tokens_per_s
(batch x seq / step_s), step_s (median timed step), mfu (FLOPs per token x
tokens_per_s / peak, FLOPs per token being 6 x params, embeddings included,
+ 12 x layers x seq x hidden; peak 989 TFLOP/s, dense bf16 H100 / H200, or
`--peak-tflops`), peak_memory_bytes (torch.cuda.max_memory_allocated),
torch, device (torch.cuda.get_device_name), compiled. It asserts no timing.
Without torch or a CUDA device it says so on stderr and exits 0; a model
that fails is reported on stderr, the others still run, and it exits 1.

`--quick`: toy shapes (2 layers, hidden 64, 4 heads, llama 2 key/value heads,
MLP 256, vocabulary 500, batch 2 x 32, 1 warm-up, 1 step). `--cpu` runs on
the CPU (bf16 autocast, AdamW unfused, no compile, attention written out
before torch 2.0), to check the logic without a GPU:
/usr/bin/python3 bench/torch_gpu.py --quick --cpu (Debian's python3-torch).
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import re
import statistics
import sys
import time

GPT2 = dict(arch="gpt2", vocab=50257)
LLAMA = dict(arch="llama", vocab=128256, kv_heads=8, rope_theta=500000.0)
MODELS = {
    "gpt2_124m": dict(GPT2, layers=12, hidden=768, heads=12, ffn=3072),
    "gpt2_350m": dict(GPT2, layers=24, hidden=1024, heads=16, ffn=4096),
    "llama_1b": dict(LLAMA, layers=16, hidden=2048, heads=32, ffn=8192),
}
QUICK_SHAPE = dict(layers=2, hidden=64, heads=4, ffn=256, vocab=500)
QUICK_RUN = dict(batch=2, seq=32, warmup=1, steps=1)
FULL_RUN = dict(batch=8, seq=1024, warmup=3, steps=10)


def log(message):
    print(f"torch_gpu: {message}", file=sys.stderr, flush=True)


def attention(torch, q, k, v, groups):
    """Causal attention of q (b, heads, t, d) over k, v (b, heads / groups, t, d)."""
    F = torch.nn.functional
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    gqa = sdpa is not None and tuple(map(int, re.findall(r"\d+", torch.__version__)[:2])) >= (2, 5)
    if groups > 1 and gqa and q.is_cuda and q.dtype in (torch.bfloat16, torch.float16):  # FlashAttention's
        return sdpa(q, k, v, is_causal=True, enable_gqa=True)
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    if sdpa is not None:
        return sdpa(q, k, v, is_causal=True)
    t = q.shape[-2]  # torch < 2.0 (the --cpu check only): written out
    causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    return scores.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v


def make_norm(torch, cfg):
    nn, c = torch.nn, cfg["hidden"]
    if cfg["arch"] == "gpt2":
        return nn.LayerNorm(c, eps=1e-5)
    if hasattr(nn, "RMSNorm"):
        return nn.RMSNorm(c, eps=1e-5)

    class RMSNorm(nn.Module):  # torch < 2.4
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(c))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    return RMSNorm()


def rope_tables(torch, cfg, seq):
    """(cos, sin), each (seq, head_dim), the rotate-half convention."""
    hd = cfg["hidden"] // cfg["heads"]
    inv = 1.0 / cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rope(torch, x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)


def make_block(torch, cfg):
    nn, F = torch.nn, torch.nn.functional
    c, nh, ffn = cfg["hidden"], cfg["heads"], cfg["ffn"]
    nkv, hd, llama = cfg.get("kv_heads", nh), c // nh, cfg["arch"] == "llama"

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm_1, self.norm_2 = make_norm(torch, cfg), make_norm(torch, cfg)
            self.qkv, self.proj = nn.Linear(c, (nh + 2 * nkv) * hd, bias=not llama), nn.Linear(c, c, bias=not llama)
            self.fc = nn.Linear(c, 2 * ffn if llama else ffn, bias=not llama)  # llama: gate and up
            self.mlp_proj = nn.Linear(ffn, c, bias=not llama)

        def attention(self, x, rope):
            b, t, _ = x.shape
            q, k, v = self.qkv(x).view(b, t, nh + 2 * nkv, hd).transpose(1, 2).split([nh, nkv, nkv], dim=1)
            if rope is not None:
                q, k = apply_rope(torch, q, *rope), apply_rope(torch, k, *rope)
            return self.proj(attention(torch, q, k, v, nh // nkv).transpose(1, 2).reshape(b, t, c))

        def mlp(self, x):
            if llama:
                gate, up = self.fc(x).chunk(2, dim=-1)
                return self.mlp_proj(F.silu(gate) * up)
            return self.mlp_proj(F.gelu(self.fc(x), approximate="tanh"))

        def forward(self, x, rope):
            x = x + self.attention(self.norm_1(x), rope)
            return x + self.mlp(self.norm_2(x))

    return Block()


def init_weights(torch, model, layers):
    """GPT-2's: N(0, 0.02), residual projections scaled by 1 / sqrt(2 x layers), zero biases."""
    for name, p in model.named_parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, 0.0, 0.02 / (math.sqrt(2 * layers) if name.endswith("proj.weight") else 1.0))
        elif name.endswith("bias"):
            torch.nn.init.zeros_(p)


def build_model(torch, cfg, seq):
    nn, F = torch.nn, torch.nn.functional
    c, vocab, llama = cfg["hidden"], cfg["vocab"], cfg["arch"] == "llama"

    class Lm(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, c)
            self.wpe = None if llama else nn.Embedding(seq, c)
            self.blocks = nn.ModuleList(make_block(torch, cfg) for _ in range(cfg["layers"]))
            self.norm_f = make_norm(torch, cfg)
            self.head = nn.Linear(c, vocab, bias=False) if llama else None  # gpt2: tied to wte
            if llama:
                cos, sin = rope_tables(torch, cfg, seq)
                self.register_buffer("cos", cos, persistent=False)
                self.register_buffer("sin", sin, persistent=False)
            init_weights(torch, self, cfg["layers"])

        def forward(self, tokens, targets):
            t = tokens.shape[1]
            x = self.wte(tokens)
            if self.wpe is not None:
                x = x + self.wpe(torch.arange(t, device=tokens.device))
            rope = (self.cos[:t], self.sin[:t]) if llama else None
            for block in self.blocks:
                x = block(x, rope)
            x = self.norm_f(x)
            logits = self.head(x) if llama else F.linear(x, self.wte.weight)
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    return Lm()


def make_optimizer(torch, model, cuda):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [dict(params=decay, weight_decay=0.1), dict(params=rest, weight_decay=0.0)]
    return torch.optim.AdamW(groups, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, **(dict(fused=True) if cuda else {}))


def train_step(torch, model, params, opt, batch, device):
    """One full step, waited for on the GPU."""
    with torch.autocast(device.type, dtype=torch.bfloat16):
        loss = model(*batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def compile_or_eager(torch, eager, name, why=None):
    """torch.compile(eager), or eager with the reason on stderr when compiling failed (`why`)."""
    try:
        if why is None:
            return torch.compile(eager)
    except Exception as e:  # noqa: BLE001 (any compile failure: report it, run eager)
        why = e
    log(f"{name}: torch.compile failed, running eager: {type(why).__name__}: {str(why)[:2000]}")
    return eager


def warm_up(torch, name, model, eager, rest, steps):
    """The untimed steps; the model that ran them (eager if the compiled one failed)."""
    for _ in range(steps):
        try:
            train_step(torch, model, *rest)
        except Exception as e:  # noqa: BLE001 (the compiled model failing: run eager)
            if model is eager:
                raise
            model = compile_or_eager(torch, eager, name, why=e)
            rest[1].zero_grad(set_to_none=True)
            train_step(torch, model, *rest)
    return model


def setup(torch, cfg, args, device):
    """(the eager model, its parameters, the optimizer, (tokens, targets))."""
    torch.manual_seed(1)
    with device if hasattr(device, "__enter__") else contextlib.nullcontext():  # built on the device
        eager = build_model(torch, cfg, args.seq).to(device)
    gen = torch.Generator(device=device).manual_seed(1234)
    shape = (args.batch, args.seq)
    batch = tuple(torch.randint(0, cfg["vocab"], shape, device=device, generator=gen) for _ in range(2))
    return eager, list(eager.parameters()), make_optimizer(torch, eager, device.type == "cuda"), batch


def measure(torch, name, cfg, args, device):
    """One model's figures (a dict in the printed order)."""
    eager, params, opt, batch = setup(torch, cfg, args, device)
    cuda = device.type == "cuda"
    model = compile_or_eager(torch, eager, name) if args.compile and cuda else eager
    model = warm_up(torch, name, model, eager, (params, opt, batch, device), args.warmup)
    times = []
    for _ in range(args.steps):
        if cuda:
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        train_step(torch, model, params, opt, batch, device)
        times.append(time.perf_counter() - start)
    count, step_s = sum(p.numel() for p in params), statistics.median(times)
    tokens_per_s = args.batch * args.seq / step_s
    flops_per_token = 6.0 * count + 12.0 * cfg["layers"] * args.seq * cfg["hidden"]
    return dict(model=name, params=count, batch=args.batch, seq=args.seq, tokens_per_s=tokens_per_s,
                step_s=step_s, mfu=flops_per_token * tokens_per_s / (args.peak_tflops * 1e12),
                peak_memory_bytes=torch.cuda.max_memory_allocated(device) if cuda else None,
                torch=torch.__version__, device=torch.cuda.get_device_name(device) if cuda else "cpu",
                compiled=model is not eager)


def release(torch, device):
    gc.collect()
    if hasattr(getattr(torch, "_dynamo", None), "reset"):
        torch._dynamo.reset()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def pick_device(torch, args):
    """The device to run on, or None (the reason said) where there is no CUDA device."""
    if args.cpu:
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    try:
        torch.cuda.init()
        reason = f"torch.cuda.is_available() is False ({torch.cuda.device_count()} devices)"
    except Exception as e:  # noqa: BLE001 (the reason is all that is wanted)
        reason = (str(e).strip() or type(e).__name__).splitlines()[0]
    log(f"no CUDA device: {reason} (torch {torch.__version__}, CUDA build {torch.version.cuda}); nothing measured")
    return None


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated, of " + ", ".join(MODELS))
    for key in ("batch", "seq", "warmup", "steps"):
        p.add_argument(f"--{key}", type=int, help=f"default {FULL_RUN[key]} ({QUICK_RUN[key]} with --quick)")
    p.add_argument("--peak-tflops", type=float, default=989.0, help="the peak the MFU divides by")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--quick", action="store_true", help="toy shapes, one step")
    p.add_argument("--cpu", action="store_true", help="run on the CPU (to check the script)")
    args = p.parse_args()
    args.names = [m.strip() for m in args.models.split(",") if m.strip()]
    if not args.names or any(m not in MODELS for m in args.names):
        p.error(f"--models takes names among {', '.join(MODELS)}, not '{args.models}'")
    for key, default in (QUICK_RUN if args.quick else FULL_RUN).items():
        value = getattr(args, key)
        if value is not None and value < 1:
            p.error(f"--{key} must be at least 1")
        setattr(args, key, default if value is None else value)
    if args.peak_tflops <= 0:
        p.error("--peak-tflops must be positive")
    return args


def main():
    args = parse_args()
    try:
        import torch  # noqa: PLC0415 (optional dependency)
    except ImportError as e:
        log(f"PyTorch is not importable by {sys.executable} ({e}); nothing measured")
        return 0
    device = pick_device(torch, args)
    if device is None:
        return 0
    failed = False
    for name in args.names:
        cfg = dict(MODELS[name], **(QUICK_SHAPE if args.quick else {}))
        if args.quick and cfg["arch"] == "llama":
            cfg["kv_heads"] = 2
        try:
            print(json.dumps(measure(torch, name, cfg, args, device)), flush=True)
        except Exception as e:  # noqa: BLE001 (one model failing leaves the others to run)
            log(f"{name} failed: {type(e).__name__}: {str(e)[:2000]}")
            failed = True
        release(torch, device)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
