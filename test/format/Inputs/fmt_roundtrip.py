"""`aviflowc fmt` on each FILE that parses: its output formatted again is the
same bytes (idempotent), and means what FILE meant: `--dump=sema` of the two
is the same but for the declarations' line:col. Files with errors must be
left to fmt's diagnostics (exit 1, nothing printed).

usage: fmt_roundtrip.py AVIFLOWC OUT_DIR PATH...
PATH is a file or a folder, whose .avf files are taken (recursively, in
order). Every FILE is copied under OUT_DIR (paths relative to here), and each
formatted copy is written beside its original's copy as NAME.fmt.avf, so
that relative imports resolve. Prints one line per problem, then `checked N
files (M with errors, skipped), P problems`.
"""
import shutil
import os
import re
import subprocess
import sys

LOCATION = re.compile(r"  // \d+:\d+$", re.M)


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def sema(aviflowc, path):
    r = run([aviflowc, path, "--dump=sema"])
    return r.returncode, LOCATION.sub("", r.stdout)


def avf_files(paths):
    for path in paths:
        if not os.path.isdir(path):
            yield path
            continue
        for root, dirs, names in os.walk(path):
            dirs.sort()
            yield from (os.path.join(root, n) for n in sorted(names) if n.endswith(".avf"))


def main():
    aviflowc, out_dir = sys.argv[1], sys.argv[2]
    files = list(avf_files(sys.argv[3:]))
    for path in files:
        mirrored = os.path.join(out_dir, os.path.relpath(path))
        os.makedirs(os.path.dirname(mirrored), exist_ok=True)
        shutil.copyfile(path, mirrored)
    problems, skipped = 0, 0
    for path in files:
        first = run([aviflowc, "fmt", path])
        # Exit 1 with diagnostics: the file has errors. Anything else (a
        # crash, a failure that says nothing) is fmt's problem.
        if first.returncode not in (0, 1) or (first.returncode == 1 and not first.stderr.strip()):
            print(f"{path}: fmt exited with {first.returncode}\n{first.stderr[:2000]}")
            problems += 1
            continue
        if first.returncode != 0:
            skipped += 1
            if first.stdout:
                print(f"{path}: fmt failed yet printed output")
                problems += 1
            continue
        original = os.path.join(out_dir, os.path.relpath(path))
        copy = original[: -len(".avf")] + ".fmt.avf"
        with open(copy, "w") as f:
            f.write(first.stdout)
        second = run([aviflowc, "fmt", copy])
        if second.returncode != 0 or second.stdout != first.stdout:
            print(f"{path}: not idempotent (exit {second.returncode})\n{second.stderr[:2000]}")
            problems += 1
            continue
        a, b = sema(aviflowc, original), sema(aviflowc, copy)
        if a != b:
            print(f"{path}: --dump=sema differs after fmt (exit {a[0]} vs {b[0]})")
            problems += 1
    print(f"checked {len(files)} files ({skipped} with errors, skipped), {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
