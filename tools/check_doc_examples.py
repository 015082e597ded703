#!/usr/bin/env python3
"""Fails when an .avf example in the Markdown docs is not in the layout of `aviflowc fmt`.

Every tracked *.md file (but test data in Inputs/ folders) is read, and each
fenced code block by its info string:
  ```avf            must be what `aviflowc fmt` makes of it: as a file of its own
                    when it parses as one; otherwise as the fields of a declaration
                    (formatted inside `job doc_example { ... }` and compared with
                    that body, its indentation removed).
  ```avf fragment   a piece that does not parse even so (pseudo-syntax, a part of
  ```avf failing    an expression, an example of a syntax error): checked like
                    ```avf when it parses, counted and listed when it does not.
  ``` (no info)     must not be .avf: a block that parses as above is reported,
                    so that no example escapes the check by its missing label.
  ```other          not read.
A line of only `...` stands for elided lines, at the indentation of what follows.

Usage: tools/check_doc_examples.py AVIFLOWC [ROOT] [--fix]
  (ROOT: default the repository of this script; --fix rewrites the blocks that
  parse but are not canonical.) Prints one `FILE:LINE: problem` per finding
  with the difference, then a summary; exits 1 when there is any problem.
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
ELISION = "..."
ELISION_COMMENT = "// doc-example-elision"
# Fields alone do not parse; inside this wrapper they are a declaration's
# body. The empty record keeps fmt from joining a short body onto one line.
WRAPPER_HEAD = ["job doc_example {", "  doc_example {}"]
WRAPPER_TAIL = ["}"]
WRAPPER_INDENT = "  "
UNCHECKED_MARKS = ("fragment", "failing")


class FmtFailed(Exception):
    """A failure of the check itself (aviflowc or git), not a finding in the docs."""


class Block:
    def __init__(self, path, line, indent, info, lines, end):
        self.path, self.line, self.indent, self.info, self.lines, self.end = path, line, indent, info, lines, end

    def words(self):
        return self.info.split()


def fenced_blocks(path, text):
    """The fenced code blocks of a Markdown file (CommonMark's fences)."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match or (match.group(2)[0] == "`" and "`" in match.group(3)):
            i += 1
            continue
        indent, fence = match.group(1), match.group(2)
        closing = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip(" ") for line in lines[i + 1:end]]
        blocks.append(Block(path, i + 1, indent, match.group(3).strip(), body, end))
        i = end + 1
    return blocks


def run_fmt(aviflowc, source):
    """(formatted text, None) or (None, diagnostics) for one file's text."""
    with tempfile.NamedTemporaryFile("w", suffix=".avf", delete=False, encoding="utf-8") as f:
        f.write(source)
        name = f.name
    try:
        result = subprocess.run([aviflowc, "fmt", name], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise FmtFailed(f"cannot run `{aviflowc} fmt`: {error}") from error
    finally:
        os.unlink(name)
    # 1 with diagnostics: the block has syntax errors; anything else is
    # aviflowc's failure, not the block's.
    if result.returncode not in (0, 1) or (result.returncode == 1 and not result.stderr.strip()):
        raise FmtFailed(f"`{aviflowc} fmt` exited with {result.returncode}: {result.stderr.strip()[:500]}")
    if result.returncode != 0:
        return None, result.stderr.replace(name, "<block>")
    return result.stdout, None


def hide_elisions(lines):
    return [ELISION_COMMENT if line.strip() == ELISION else line for line in lines]


def show_elisions(lines):
    return [line.replace(ELISION_COMMENT, ELISION) if line.strip() == ELISION_COMMENT else line for line in lines]


def canonical_alone(aviflowc, lines):
    out, errors = run_fmt(aviflowc, "\n".join(hide_elisions(lines)) + "\n")
    return (None, errors) if out is None else (show_elisions(out.rstrip("\n").split("\n")), None)


def canonical_as_fields(aviflowc, lines):
    source = WRAPPER_HEAD + hide_elisions(lines) + WRAPPER_TAIL
    out, errors = run_fmt(aviflowc, "\n".join(source) + "\n")
    if out is None:
        return None, errors
    formatted = out.rstrip("\n").split("\n")
    body = formatted[len(WRAPPER_HEAD):len(formatted) - len(WRAPPER_TAIL)]
    if formatted[:len(WRAPPER_HEAD)] != WRAPPER_HEAD or formatted[-len(WRAPPER_TAIL):] != WRAPPER_TAIL:
        return None, "the formatted wrapper is not the wrapper (fields that end the declaration?)"
    if any(line and not line.startswith(WRAPPER_INDENT) for line in body):
        return None, "the formatted fields are not inside the wrapper"
    return show_elisions([line[len(WRAPPER_INDENT):] for line in body]), None


def canonical_form(aviflowc, lines):
    """(canonical lines, how) for a block that parses alone or as fields; (None, diagnostics) otherwise."""
    canonical, errors = canonical_alone(aviflowc, lines)
    if canonical is not None:
        return canonical, "file"
    canonical, _ = canonical_as_fields(aviflowc, lines)
    if canonical is not None:
        return canonical, "fields"
    return None, errors


def trim_blank_edges(lines):
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


class Report:
    def __init__(self):
        self.problems, self.unchecked, self.canonical, self.fixes = [], [], {"file": 0, "fields": 0}, []

    def problem(self, block, message, detail=""):
        self.problems.append(f"{block.path}:{block.line}: {message}" + (f"\n{detail}" if detail else ""))


def check_avf_block(aviflowc, block, report):
    lines = trim_blank_edges(block.lines)
    canonical, how = canonical_form(aviflowc, lines)
    marked = any(word in UNCHECKED_MARKS for word in block.words()[1:])
    if canonical is None:
        if marked:
            report.unchecked.append(f"{block.path}:{block.line}: ```{block.info}")
        else:
            first = "\n".join("    " + line for line in how.strip().split("\n")[:6])
            report.problem(block, "this ```avf block does not parse as a file or as the fields of a declaration; "
                           "fix it, or mark it ```avf fragment", first)
        return
    if canonical == block.lines:
        report.canonical[how] += 1
        return
    diff = difflib.unified_diff(block.lines, canonical, "as written", "aviflowc fmt", lineterm="", n=1)
    read_as = "a file" if how == "file" else "the fields of a declaration"
    report.problem(block, f"this ```avf block is not in the layout of `aviflowc fmt` (read as {read_as})",
                   "\n".join("    " + line for line in diff))
    report.fixes.append((block, canonical))


def check_unlabelled_block(aviflowc, block, report):
    lines = trim_blank_edges(block.lines)
    if lines and canonical_form(aviflowc, lines)[0] is not None:
        report.problem(block, "this block is .avf: label it ```avf (or give it the info string of what it is)")


def tracked_markdown(root):
    """Every tracked Markdown file but the test data of Inputs/ folders (samples of what is checked)."""
    result = subprocess.run(["git", "-C", root, "ls-files", "-z", "*.md", ":!:*/Inputs/*"], capture_output=True)
    if result.returncode != 0:
        raise FmtFailed(f"cannot list the Markdown files of {root}: {result.stderr.decode().strip()}")
    return sorted(f for f in result.stdout.decode().split("\0") if f)


def apply_fixes(root, fixes):
    by_file = {}
    for block, canonical in fixes:
        by_file.setdefault(block.path, []).append((block, canonical))
    for path, items in by_file.items():
        with open(os.path.join(root, path), encoding="utf-8") as f:
            lines = f.read().split("\n")
        for block, canonical in sorted(items, key=lambda item: -item[0].line):
            lines[block.line:block.end] = [block.indent + line if line else line for line in canonical]
        with open(os.path.join(root, path), "w", encoding="utf-8") as f:
            f.write("\n".join(lines))


def check_tree(aviflowc, root):
    report = Report()
    for path in tracked_markdown(root):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            blocks = fenced_blocks(path, f.read())
        for block in blocks:
            language = block.words()[0] if block.words() else ""
            if language == "avf":
                check_avf_block(aviflowc, block, report)
            elif language == "":
                check_unlabelled_block(aviflowc, block, report)
    return report


def main(argv):
    fix = "--fix" in argv
    args = [a for a in argv if a != "--fix"]
    if not args or len(args) > 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    aviflowc = args[0]
    root = args[1] if len(args) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        report = check_tree(aviflowc, root)
    except FmtFailed as error:
        print(f"check_doc_examples: {error}", file=sys.stderr)
        return 2
    for line in report.problems:
        print(line)
    for line in report.unchecked:
        print(f"{line}: does not parse, not checked")
    print(f"check_doc_examples: {report.canonical['file']} ```avf block(s) canonical as files, "
          f"{report.canonical['fields']} as fields, {len(report.unchecked)} fragment(s) not checked, "
          f"{len(report.problems)} problem(s)")
    if fix and report.fixes:
        apply_fixes(root, report.fixes)
        print(f"check_doc_examples: rewrote {len(report.fixes)} block(s)")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
