#!/usr/bin/env python3
"""Checks docs/explain/CODE.md, the long explanations of `aviflowc explain`.

Usage:
  check_explanations.py complete SOURCE_ROOT [--hundreds A-B]
      every registry code has a file and every file names a registry code
  check_explanations.py examples SOURCE_ROOT AVIFLOWC [--hundreds A-B] [--strict]
      runs every example of every file: the failing one reports `[CODE]`, the
      fixed one exits 0 with no error and no `[CODE]`; and `aviflowc explain
      CODE` prints the file as it is

--hundreds 00-05 looks only at E00xx-E05xx and W00xx-W05xx. --strict also
fails a failing example that reports an error besides CODE (for writing them;
the suite does not ask it). --no-explain leaves out the comparison with
`aviflowc explain` (for a tree that aviflowc was not built from).

An example is one or more fenced blocks `avf failing` (under `## Failing
example`) or `avf fixed` (under `## Fixed example`) with optional attributes
`file=NAME.avf` (default job.avf; each block is one file of one folder, the
first is compiled) and, on the first block, `command=check|plan|compile`
(default check; compile is `aviflowc FILE -o DIR`). A code that no source file
can trigger is listed with its reason in test/explain/console_only.txt and
shows a `console` block instead.
"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_explanations import explanation_files, read_explanation, registry_codes  # noqa: E402

FENCE = re.compile(r"^(`{3,})(.*)$")
FILE_NAME = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*\.avf$")
COMMANDS = ("check", "plan", "compile")
SECTIONS = {"failing": "## Failing example", "fixed": "## Fixed example"}


class Block:
    def __init__(self, info: str, body: str, line: int, section: str):
        self.info, self.body, self.line, self.section = info, body, line, section


def fenced_blocks(text: str) -> list:
    """Every fenced block with its info string, first line and the `## ` section it is in."""
    blocks, section, lines, i = [], "", text.split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i].strip()
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == m.group(1)), None)
        if end is None:
            raise ValueError(f"line {i + 1}: the block opened here is not closed")
        blocks.append(Block(m.group(2).strip(), "\n".join(lines[i + 1:end]) + "\n", i + 1, section))
        i = end + 1
    return blocks


def example_files(blocks: list, role: str) -> tuple:
    """(command, [(name, text)]) of the `avf ROLE` blocks, or raises ValueError."""
    files, command = [], "check"
    for index, block in enumerate(b for b in blocks if b.info.split()[:2] == ["avf", role]):
        if block.section != SECTIONS[role]:
            raise ValueError(f"line {block.line}: an `avf {role}` block belongs under `{SECTIONS[role]}`")
        name = "job.avf"
        for attribute in block.info.split()[2:]:
            key, _, value = attribute.partition("=")
            if key == "file" and FILE_NAME.match(value) and ".." not in value.split("/"):
                name = value
            elif key == "command" and value in COMMANDS and index == 0:
                command = value
            else:
                raise ValueError(f"line {block.line}: unknown attribute `{attribute}` (file=NAME.avf; "
                                 f"command=check|plan|compile on the first block)")
        if name in (n for n, _ in files):
            raise ValueError(f"line {block.line}: a second block for `{name}`")
        files.append((name, block.body))
    return command, files


def parse_examples(text: str) -> tuple:
    """(every fenced block, {role: (command, files)}), or raises ValueError."""
    blocks = fenced_blocks(text)
    for block in blocks:
        if block.info.split()[:1] == ["avf"] and block.info.split()[1:2] not in (["failing"], ["fixed"]):
            raise ValueError(f"line {block.line}: an avf block is `avf failing` or `avf fixed`, not "
                             f"`{block.info}`: every example is compiled")
    return blocks, {role: example_files(blocks, role) for role in SECTIONS}


def run(args: list, cwd=None) -> tuple:
    """(exit status, stdout, stderr) of a command; -1 when it cannot run or takes over 2 minutes."""
    try:
        r = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, "", f"cannot run {args[0]}: {e}"
    return r.returncode, r.stdout, r.stderr


def run_example(aviflowc: str, command: str, files: list) -> tuple:
    """(exit status, stdout + stderr) of aviflowc on the example's first file."""
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files:
            path = pathlib.Path(folder, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        main = files[0][0]
        args = {"check": ["check", main], "plan": ["plan", main], "compile": [main, "-o", "out"]}[command]
        status, out, err = run([aviflowc, "--color=never"] + args, cwd=folder)
        return status, out + err


def check_file(path: pathlib.Path, codes: set, console_only: dict, aviflowc: str, strict: bool,
               compare_text: bool) -> list:
    """The problems of one explanation file, each a line."""
    try:
        code, _, text = read_explanation(path, codes)
    except ValueError as e:
        return [str(e)]
    try:
        blocks, examples = parse_examples(text)
    except ValueError as e:
        return [f"{path}: {e}"]
    status, shown, err = run([aviflowc, "explain", code.lower()]) if compare_text else (0, text, "")
    if status != 0 or shown != text:
        return [f"{path}: `aviflowc explain {code.lower()}` exits {status} and does not print the file as it "
                f"is (rebuild aviflowc after editing docs/explain/):\n{err}"]
    if code in console_only:
        problems = []
        if examples["failing"][1] or examples["fixed"][1]:
            problems.append(f"{path}: {code} is in console_only.txt but has avf blocks")
        if not any(b.info == "console" and f"[{code}]" in b.body for b in blocks):
            problems.append(f"{path}: needs a ```console block that shows the diagnostic `[{code}]`")
        return problems
    problems = [f"{path}: no `avf {role}` block under `{SECTIONS[role]}` (or list {code} in console_only.txt)"
                for role in SECTIONS if not examples[role][1]]
    if problems:
        return problems
    status, output = run_example(aviflowc, *examples["failing"])
    if f"[{code}]" not in output:
        problems.append(f"{path}: the failing example does not report [{code}]:\n{output}")
    others = sorted(set(re.findall(r"error: .*\[(E\d{4})\]", output)) - {code})
    if strict and others:
        problems.append(f"{path}: the failing example also reports {', '.join(others)}:\n{output}")
    status, output = run_example(aviflowc, *examples["fixed"])
    if status != 0 or "error:" in output or f"[{code}]" in output:
        problems.append(f"{path}: the fixed example exits {status} or reports an error or [{code}]:\n{output}")
    return problems


def in_hundreds(code: str, hundreds: tuple) -> bool:
    return hundreds[0] <= int(code[1:3]) <= hundreds[1]


def read_console_only(root: pathlib.Path) -> dict:
    """test/explain/console_only.txt: `CODE  reason` lines, `#` comments."""
    entries = {}
    for line in (root / "test/explain/console_only.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            code, _, reason = line.partition(" ")
            entries[code] = reason.strip()
    return entries


def check_complete(root: pathlib.Path, hundreds: tuple) -> list:
    codes = [c for c in registry_codes(root) if in_hundreds(c, hundreds)]
    have = {p.stem for p in explanation_files(root)}
    problems = [f"error: {c} has no explanation: write docs/explain/{c}.md" for c in codes if c not in have]
    problems += [f"error: docs/explain/{name}.md names no code of the registry" for name in sorted(have)
                 if name not in registry_codes(root)]
    console_only = read_console_only(root)
    problems += [f"error: console_only.txt: {c} is not a code of the registry" for c in console_only
                 if c not in registry_codes(root)]
    problems += [f"error: console_only.txt: {c} gives no reason" for c, reason in console_only.items() if not reason]
    print(f"{len(codes) - sum(c not in have for c in codes)} of {len(codes)} codes have an explanation")
    return problems


def check_examples(root: pathlib.Path, aviflowc: str, hundreds: tuple, strict: bool, compare_text: bool) -> list:
    codes, console_only = set(registry_codes(root)), read_console_only(root)
    paths = [p for p in explanation_files(root) if p.stem in codes and in_hundreds(p.stem, hundreds)]
    paths += [p for p in explanation_files(root) if p.stem not in codes]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda p: check_file(p, codes, console_only, aviflowc, strict, compare_text), paths))
    print(f"checked the examples of {len(paths)} explanations")
    return [f"error: {problem}" for problems in results for problem in problems]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("complete", "examples"))
    parser.add_argument("root", type=pathlib.Path)
    parser.add_argument("aviflowc", nargs="?")
    parser.add_argument("--hundreds", default="00-99", help="A-B: only the codes E/W A00..B99")
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--no-explain", action="store_true",
                        help="do not compare `aviflowc explain CODE` with the file (for a tree the binary was not built from)")
    args = parser.parse_args()
    low, _, high = args.hundreds.partition("-")
    hundreds = (int(low), int(high or low))
    if args.mode == "examples" and not args.aviflowc:
        parser.error("`examples` needs the aviflowc to run")
    # The examples run in folders of their own: a relative path would not reach it.
    aviflowc = os.path.abspath(shutil.which(args.aviflowc) or args.aviflowc) if args.aviflowc else None
    problems = (check_complete(args.root, hundreds) if args.mode == "complete" else check_examples(
        args.root, aviflowc, hundreds, args.strict, not args.no_explain))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
