#!/usr/bin/env python3
"""Front-end throughput: generates .avf files of growing size and times
`aviflowc check` on each (wall time, MB/s, declarations/s, peak RSS), then
the front end in one go (its own peak RSS), and each phase on its own (lex,
parse, imports, sema: build/bin/frontend_phases).

With --syntax-errors, the files are ones being edited instead: each size with
one syntax error at the end, one in the middle, and a `{` deleted in the
middle (a run of errors), timed by `frontend_phases --expect-errors` (lexing,
and parsing next to the whole-file ANTLR parse).

Usage: bench/frontend_bench.py [AVIFLOWC] [--sizes 1000,10000,50000] [--phases PROGRAM] [--syntax-errors]
Prints figures only; it asserts nothing (timings vary with the machine).
"""
import argparse
import os
import pathlib
import platform
import resource
import subprocess
import tempfile
import time

DECL = """gpu g{i} : a100_80g {{ memory = {gib}GiB; tdp = 400W }}
model m{i} {{ arch = llama; layers = 32; hidden = 4096; heads = 32; ffn = 4 * 2752; vocab = 32000; seq_len = 2048 }}
job j{i} {{
  model = m{i}; data = docs; cluster = pod; gpus = 128; image = "r/train:1"
  parallel {{ tensor = 8; pipeline = 1; data = auto; zero = 1; micro_batch = 4 }}
  batch = 1024; tokens = 2T
  optimizer {{ kind = adamw; lr = 3e-4; betas = [0.9, 0.95]; warmup = 2000 }}
}}
"""

# A clean file: `check` plans every job, with no diagnostic.
HEADER = """import "std/hardware"
node box : hgx_a100 { cpus = 256; cpu_memory = 2TB }
cluster pod {
  node = box; nodes = 16; network = ib_ndr; scheduler = volcano
  topology = fat_tree { nodes_per_leaf = 8; leaf_label = "leaf" }
}
storage cold { kind = s3; endpoint = "http://s3"; bucket = "b"; credentials = secret("s3") }
storage hot { kind = beegfs; mount = "/mnt/hot"; capacity = 10PB }
dataset docs { source = cold / "d"; tokens = 4.2T; shards = 512; stage_to = hot }
"""


def run(aviflowc: str, path: pathlib.Path) -> tuple[float, int, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([aviflowc, "check", str(path)], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(rss, before), proc.returncode


# Where a file being edited has its syntax errors: (name, edit of the text).
SYNTAX_ERRORS = [
    ("error at the end", lambda text, n: text + "job tail { gpus = }\n"),
    ("error in the middle", lambda text, n: text.replace("gpus = 128", "gpus = 128 128", n // 2 + 1)
     .replace("gpus = 128 128", "gpus = 128", n // 2)),
    ("`{` deleted in the middle", lambda text, n: text.replace(f"job j{n // 2} {{", f"job j{n // 2}")),
]


def time_syntax_errors(phases: str, sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            text = HEADER + "".join(DECL.format(i=i, gib=80 + i % 3) for i in range(n))
            for name, edit in SYNTAX_ERRORS:
                path = pathlib.Path(tmp) / f"bench_{n}.avf"
                path.write_text(edit(text, n))
                print(f"{n} jobs, {name}:")
                proc = subprocess.run([phases, str(path), "--runs", "3", "--expect-errors"], capture_output=True,
                                      text=True)
                print("        " + (proc.stdout + proc.stderr).strip().replace("\n", "\n        "))


def cpu_model() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("aviflowc", nargs="?", default="build/bin/aviflowc")
    parser.add_argument("--sizes", default="100,1000,10000,30000")
    parser.add_argument("--phases", default="build/bin/frontend_phases")
    parser.add_argument("--syntax-errors", action="store_true")
    args = parser.parse_args()
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs")
    if args.syntax_errors:
        time_syntax_errors(args.phases, [int(s) for s in args.sizes.split(",")])
        return
    print(f"{'jobs':>7} {'MB':>7} {'seconds':>8} {'MB/s':>7} {'decls/s':>9} {'peak RSS MB':>12} exit")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            path = pathlib.Path(tmp) / f"bench_{n}.avf"
            path.write_text(HEADER + "".join(DECL.format(i=i, gib=80 + i % 3) for i in range(n)))
            mb = path.stat().st_size / 1e6
            seconds, rss_kb, code = run(args.aviflowc, path)
            print(f"{n:>7} {mb:>7.2f} {seconds:>8.3f} {mb / seconds:>7.2f} {3 * n / seconds:>9.0f} "
                  f"{rss_kb / 1024:>12.1f} {code}")
            if pathlib.Path(args.phases).exists():
                # One run in a fresh process (as `check` does), then the best
                # of three in one process (as the language server does), then
                # each phase apart.
                for mode in (["--whole", "--runs", "1"], ["--whole", "--runs", "3"], ["--runs", "3"]):
                    phases = subprocess.run([args.phases, str(path), *mode], capture_output=True, text=True)
                    print("        " + (phases.stdout + phases.stderr).strip().replace("\n", "\n        "))


if __name__ == "__main__":
    main()
