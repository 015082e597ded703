#!/usr/bin/env python3
"""Writes the table of diagnostic codes in docs/diagnostics.md from the
registry, compiler/diag/diagnostic_kinds.def, between the two marker lines.
Each code links its long explanation, docs/explain/CODE.md (`aviflowc explain
CODE`), where the file exists (test/explain/complete.test requires one for every
code).

Usage: gen_diagnostic_docs.py SOURCE_ROOT [--check]
  --check  change nothing; exit 1 when the docs are out of date
"""
import pathlib
import re
import sys

BEGIN = "<!-- BEGIN GENERATED: diagnostic codes (tools/gen_diagnostic_docs.py) -->"
END = "<!-- END GENERATED -->"


def table(registry: str, explained: set) -> str:
    rows = ["| code | name | kind | message |", "|---|---|---|---|"]
    section = ""
    for line in registry.splitlines():
        header = re.match(r"^// ([EW]\d\dxx: .*)", line)
        if header:
            section = header.group(1)
            rows.append(f"| | **{section}** | | |")
        m = re.match(r'^DIAG\((\w+), "([EW]\d{4})", (\w+), "(.*)"\)$', line)
        if m:
            name, code, kind, fmt = m.groups()
            message = fmt.replace("{{", "{").replace("}}", "}").replace("{}", "…")
            message = re.sub(r"\{:[^}]*\}", "…", message).replace("\\\\", "\\").replace("|", "\\|")
            shown = f"[{code}](explain/{code}.md)" if code in explained else code
            rows.append(f"| {shown} | {name} | {kind} | {message} |")
    return "\n".join(rows)


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    registry = (root / "compiler/diag/diagnostic_kinds.def").read_text()
    doc_path = root / "docs/diagnostics.md"
    doc = doc_path.read_text()
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    explained = {p.stem for p in (root / "docs/explain").glob("*.md")}
    new = doc[:start] + "\n" + table(registry, explained) + "\n" + doc[end:]
    if "--check" in sys.argv:
        if new != doc:
            print("error: docs/diagnostics.md is out of date; run tools/gen_diagnostic_docs.py .")
            return 1
        print("docs/diagnostics.md lists every diagnostic code")
        return 0
    doc_path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
