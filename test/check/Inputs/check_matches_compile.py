"""`check` (and `plan`) report what compiling reports: for every FILE given,
the diagnostics of `aviflowc check FILE` and `aviflowc plan FILE` equal those
of `aviflowc FILE -o DIR` (JSON lines, in order), save W0910, which says what
compiling writes. check and plan write nothing.

Usage: check_matches_compile.py AVIFLOWC SCRATCH FILE...
Prints one line per file (`FILE: compile exit N, E0904 x2, ...`) and exits 1
when any file differs.
"""
import json
import os
import shutil
import subprocess
import sys

ONLY_COMPILE = {"W0910"}  # "only its plan.json is written": about compile's files


def diagnostics(aviflowc, args, cwd=None):
    run = subprocess.run([aviflowc, "--diagnostics-format=json", *args], capture_output=True, text=True, timeout=300,
                         cwd=cwd)
    lines = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    return run.returncode, [d for d in lines if d.get("code") not in ONLY_COMPILE]


def main():
    aviflowc, scratch, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    failed = False
    for path in map(os.path.abspath, files):
        out = os.path.join(scratch, "out")
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(scratch)
        compile_rc, compiled = diagnostics(aviflowc, [path, "-o", out])
        codes = sorted({d["code"] for d in compiled})
        summary = ", ".join(f"{c} x{sum(d['code'] == c for d in compiled)}" for c in codes)
        print(f"{os.path.basename(path)}: compile exit {compile_rc}, {summary or 'no diagnostics'}")
        here = os.path.join(scratch, "here")
        os.makedirs(here)
        for command in ("check", "plan"):
            rc, seen = diagnostics(aviflowc, [command, path], cwd=here)
            if os.listdir(here):
                print(f"  {command} wrote {os.listdir(here)}")
                failed = True
            if seen != compiled or rc != compile_rc:
                failed = True
                print(f"  {command} (exit {rc}) differs from compile (exit {compile_rc}):")
                for d in seen:
                    if d not in compiled:
                        print(f"    only {command}: {d['code']} {d['message']}")
                for d in compiled:
                    if d not in seen:
                        print(f"    only compile: {d['code']} {d['message']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
