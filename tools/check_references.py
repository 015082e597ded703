#!/usr/bin/env python3
"""Fails when a tracked file points at something that is not in this repository.

Checked in every tracked source, build and doc file:
  - citations of documents that are not here: a spec's section sign, an
    issue's number or name, the name of the work that owns a file;
  - repository paths named in CMake files and docs (docs/x.md, tools/y.py, ...)
    and relative Markdown links, which must exist.

Usage: tools/check_references.py [ROOT]   (default: the repository of this script)
Prints one `FILE:LINE: problem` per finding and exits 1 when there is any.
"""
import os
import re
import subprocess
import sys

TEXT_SUFFIXES = (".cpp", ".h", ".cu", ".cuh", ".def", ".py", ".sh", ".cmake", ".txt", ".md", ".test",
                 ".avf", ".g4", ".in", ".json", ".yaml", ".cfg")

FORBIDDEN = [
    (re.compile(r"\bspec\s*\u00a7"), "cites a spec that is not in this repository"),
    (re.compile(r"\bissues?\s*#?\d+\b", re.IGNORECASE), "cites an issue number"),
    (re.compile(r"\(issues?[:\s]+[\"“]?[A-Za-z]", re.IGNORECASE), "cites an issue by name"),
    (re.compile(r"\b(?:later|next|future|this|the)\s+issue'?s?\b", re.IGNORECASE), "cites the tracker of work items"),
    (re.compile(r"\bowned by the [\w -]+ work\b", re.IGNORECASE), "names the work that owns it"),
]

# Top-level folders of the repository: a path starting with one of them is a
# claim that the file exists.
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:docs|tools|compiler|runtime|kernels|stdlib|examples|test|bench|grammar|cmake)"
    r"/[\w./-]*\w)")
MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")

# Paths that name what the build or a run creates, not files of the repository.
GENERATED = re.compile(r"^(build[\w-]*|out|runs)/|/Output/|\*|<|\{|\.\.\.|%|\b[A-Z]{2,}\b")
# Only names with an extension are taken as files (a ctest entry such as
# `bench/plan_smoke` or a target is spelled like a path too).
FILE_NAME = re.compile(r"\.\w+$")


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
    return [f for f in out.decode().split("\0") if f and f.endswith(TEXT_SUFFIXES) or f.endswith("CMakeLists.txt")]


def path_exists(root, here, ref):
    ref = ref.rstrip(".")
    candidates = [os.path.join(root, ref), os.path.join(root, os.path.dirname(here), ref)]
    return any(os.path.exists(c) for c in candidates)


def check_paths(root, name, lineno, line):
    problems = []
    checks_paths = name.endswith(("CMakeLists.txt", ".cmake", ".md"))
    if checks_paths:
        for ref in REPO_PATH.findall(line):
            if FILE_NAME.search(ref) and not GENERATED.search(ref) and not path_exists(root, name, ref):
                problems.append(f"{name}:{lineno}: names `{ref}`, which is not in the repository")
    if name.endswith(".md"):
        for ref in MARKDOWN_LINK.findall(line):
            if "://" in ref or ref.startswith("mailto:") or GENERATED.search(ref):
                continue
            if not os.path.exists(os.path.join(root, os.path.dirname(name), ref)):
                problems.append(f"{name}:{lineno}: links to `{ref}`, which is not in the repository")
    return problems


def check_file(root, name):
    try:
        with open(os.path.join(root, name), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (UnicodeDecodeError, FileNotFoundError):
        return []
    problems = []
    for lineno, line in enumerate(lines, 1):
        for pattern, why in FORBIDDEN:
            if pattern.search(line):
                problems.append(f"{name}:{lineno}: {why}: {line.strip()}")
        problems += check_paths(root, name, lineno, line)
    return problems


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = [p for name in tracked_files(root) for p in check_file(root, name)]
    for p in problems:
        print(p)
    print(f"check_references: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
