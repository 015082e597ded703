"""Resuming under another layout: for each architecture, a job trained for
HALF steps under layout FROM and resumed under layout TO until 2 x HALF steps
follows the loss curve of one rank trained without a stop (fp32: within 1e-5
relative, every step). Also: a FROM run's own first HALF steps do.

Usage: reshard_matrix.py AVIFLOWC AVF_RUN TOKENS WORK_DIR
Prints one line per (arch, from, to) and exits non-zero on the first
difference past the tolerance.
"""
import json
import os
import shutil
import subprocess
import sys

HALF = 4
TOLERANCE = 1e-5

MODELS = {
    "gpt2": "model tiny : gpt2_124m { layers = 4; hidden = 32; heads = 4; ffn = 64; vocab = 384; seq_len = 16 }",
    "llama": "model tiny : llama2_7b { layers = 4; hidden = 32; heads = 4; kv_heads = 2; ffn = 64; vocab = 384; "
             "seq_len = 16 }",
}

# name: (gpus, parallel block)
LAYOUTS = {
    "one": (1, "data = 1; tensor = 1; pipeline = 1; zero = 0; micro_batch = 2"),
    "dp2_z1": (2, "data = 2; tensor = 1; pipeline = 1; zero = 1; micro_batch = 2"),
    "tp2_sp": (2, "data = 1; tensor = 2; pipeline = 1; zero = 0; micro_batch = 4; sequence_parallel = true"),
    "pp2": (2, "data = 1; tensor = 1; pipeline = 2; zero = 0; micro_batch = 1"),
    "pp2_v2": (2, "data = 1; tensor = 1; pipeline = 2; virtual_stages = 2; schedule = interleaved; zero = 0; "
                  "micro_batch = 1"),
    # 4 layers on 3 stages: 1, 2, 1 (docs/planner.md, "Uneven stages").
    "pp3": (3, "data = 1; tensor = 1; pipeline = 3; zero = 0; micro_batch = 1"),
    "dp2_tp2": (4, "data = 2; tensor = 2; pipeline = 1; zero = 0; micro_batch = 2"),
    "tp2_pp2": (4, "data = 1; tensor = 2; pipeline = 2; zero = 0; micro_batch = 2"),
    "dp2_pp2_z3": (4, "data = 2; tensor = 1; pipeline = 2; zero = 3; micro_batch = 1"),
    "dp4_z2": (4, "data = 4; tensor = 1; pipeline = 1; zero = 2; micro_batch = 1"),
}

# Four sources, each resumed under three other layouts: every layout appears;
# and the uneven stages of pp3 both ways.
PAIRS = [
    ("one", "dp2_tp2"), ("one", "dp2_pp2_z3"), ("one", "tp2_sp"),
    ("dp2_tp2", "one"), ("dp2_tp2", "pp2_v2"), ("dp2_tp2", "dp4_z2"),
    ("pp2_v2", "dp2_z1"), ("pp2_v2", "tp2_pp2"), ("pp2_v2", "one"),
    ("dp2_pp2_z3", "pp2"), ("dp2_pp2_z3", "dp2_tp2"), ("dp2_pp2_z3", "tp2_sp"),
    ("pp3", "pp2_v2"), ("dp2_tp2", "pp3"),
]


def job(arch, layout, tokens, mount):
    gpus, parallel = LAYOUTS[layout]
    return f"""import "std/hardware"
import "std/models"
{MODELS[arch]}
cluster laptop {{ node = hgx_a100; nodes = 1; network = ib_hdr }}
storage here {{ kind = local; mount = "{mount}" }}
dataset toy {{ source = here / "toy"; tokens = {tokens}; shards = 3; format = tokens_u16 }}
job tiny_run {{
  model = tiny; data = toy; cluster = laptop; gpus = {gpus}; precision = fp32
  parallel {{ {parallel} }}
  batch = 8
  steps = {2 * HALF}
  optimizer {{ kind = adamw; lr = 3e-3; warmup = 2; weight_decay = 0.1 }}
  checkpoint {{ every = {HALF}; dir = here / "ckpt" }}
}}
"""


def run(aviflowc, avf_run, arch, layout, tokens, where, steps):
    """Trains `layout` in `where` (its data/ holds toy and ckpt) up to `steps`; the losses of this run."""
    path = os.path.join(where, f"{arch}_{layout}.avf")
    with open(path, "w") as f:
        f.write(job(arch, layout, tokens, os.path.join(where, "data")))
    run_dir = os.path.join(where, f"run_{layout}")
    env = dict(os.environ, AVIFLOW_AVF_RUN=avf_run)
    done = subprocess.run([aviflowc, "run", path, "--local", "--run-dir", run_dir, "--max-steps", str(steps)],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{arch} {layout} in {where}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return {m["step"]: m["loss"] for m in map(json.loads, f)}, done.stdout


def close(a, b):
    return abs(a - b) <= TOLERANCE * abs(a)


def check(label, losses, reference, steps):
    for s in steps:
        if not close(losses[s], reference[s]):
            sys.exit(f"{label}: step {s} loss {losses[s]!r}, one rank without a stop {reference[s]!r}")


def place(where, data):
    os.makedirs(os.path.join(where, "data"), exist_ok=True)
    os.symlink(os.path.abspath(data), os.path.join(where, "data", "toy"))


def main():
    aviflowc, avf_run, tokens, work = sys.argv[1:5]
    data = os.path.join(work, "toy")
    for arch in MODELS:
        ref_dir = os.path.join(work, arch, "reference")
        place(ref_dir, data)
        reference, _ = run(aviflowc, avf_run, arch, "one", tokens, ref_dir, 2 * HALF)
        # The reference's checkpoint at step HALF is the one-rank source's.
        halves = {"one": ref_dir}
        for src in sorted({a for a, _ in PAIRS} - {"one"}):
            where = os.path.join(work, arch, "from_" + src)
            place(where, data)
            losses, _ = run(aviflowc, avf_run, arch, src, tokens, where, HALF)
            check(f"{arch} {src}", losses, reference, range(1, HALF + 1))
            halves[src] = where
        for src, dst in PAIRS:
            where = os.path.join(work, arch, f"{src}_to_{dst}")
            place(where, data)
            step = "step_%08d" % HALF
            shutil.copytree(os.path.join(halves[src], "data", "ckpt", step), os.path.join(where, "data", "ckpt", step))
            losses, out = run(aviflowc, avf_run, arch, dst, tokens, where, 2 * HALF)
            if f"(step {HALF})" not in out:
                sys.exit(f"{arch} {src} -> {dst}: did not resume from step {HALF}:\n{out}")
            check(f"{arch} {src} -> {dst}", losses, reference, range(HALF + 1, 2 * HALF + 1))
            worst = max(abs(losses[s] - reference[s]) / reference[s] for s in range(HALF + 1, 2 * HALF + 1))
            print(f"{arch}: {src} -> {dst}: steps {HALF + 1}..{2 * HALF} match one rank (worst {worst:.1e} relative)")


if __name__ == "__main__":
    main()
