"""The language server reports what `aviflowc check` reports: for every FILE
given, the diagnostics `aviflowc lsp` publishes for the file opened as a
document equal those of `aviflowc check --diagnostics-format=json FILE`:
the same codes, severities, messages, notes and help, at the same places
(a diagnostic in an imported file is shown at the import, so only its text
is compared; one without a place at the document's start; columns in UTF-16
code units, the server's default). Lowering's diagnostics (E09xx) included: the server lowers
every job as check does.

Usage: matches_check.py AVIFLOWC FILE|FOLDER...   (a folder: every .avf file
under it, but those of fuzz/ folders, the fuzzers' corpora)
Prints one line per file (`FILE: E0904 x2, ...`), then how many files were
compared, and exits 1 when any file differs, naming what only one of them
reports."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lsp_client import Client  # noqa: E402

SEVERITY = {"error": 1, "warning": 2}  # lsp/protocol.h: notes and remarks are 3


def from_check(aviflowc, path):
    run = subprocess.run([aviflowc, "check", "--diagnostics-format=json", path], capture_output=True, text=True,
                         timeout=300)
    lines = open(path, "rb").read().split(b"\n")
    out = []
    for line in run.stderr.splitlines():
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        at = d.get("location") or {}
        place = None
        if not at:
            place = (0, 0)
        elif os.path.abspath(at["file"]) == path:
            before = lines[at["line"] - 1][:at["column"] - 1].decode("utf-8", "replace")
            place = (at["line"] - 1, len(before.encode("utf-16-le")) // 2)
        out.append((d["code"], SEVERITY.get(d["severity"], 3), d["message"],
                    tuple(sorted(n["message"] for n in d["notes"])), tuple(d["help"]), place))
    return sorted(out, key=repr)


def from_server(client, path, version):
    uri = "file://" + path
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "avf", "version": version,
                                                            "text": open(path, encoding="utf-8").read()}})
    out = []
    for d in client.diagnostics(uri, version=version):
        first, *rest = d["message"].split("\n")
        related = [r["message"] for r in d.get("relatedInformation", [])]
        # A diagnostic in an imported file: at the import, "(in URI line N)",
        # its own place the first related information.
        imported = re.fullmatch(r"(.*) \(in \S+ line \d+\)", first, re.S)
        if imported:
            first = imported.group(1)
            related = related[1:]
        notes = related + [r[len("note: "):] for r in rest if r.startswith("note: ")]
        helps = tuple(r[len("help: "):] for r in rest if r.startswith("help: "))
        start = d["range"]["start"]
        out.append((d["code"], d["severity"], first, tuple(sorted(notes)), helps,
                    None if imported else (start["line"], start["character"])))
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return sorted(out, key=repr)


def avf_files(paths):
    for path in map(os.path.abspath, paths):
        if not os.path.isdir(path):
            yield path
            continue
        for folder, subfolders, names in os.walk(path):
            subfolders[:] = sorted(d for d in subfolders if d != "fuzz")
            yield from (os.path.join(folder, n) for n in sorted(names) if n.endswith(".avf"))


def main():
    aviflowc, files = sys.argv[1], list(avf_files(sys.argv[2:]))
    client = Client([aviflowc, "lsp"])
    client.request("initialize", {"processId": None, "capabilities": {}})
    client.notify("initialized", {})
    failed = False
    for version, path in enumerate(files, start=1):
        checked = from_check(aviflowc, path)
        served = from_server(client, path, version)
        codes = sorted({d[0] for d in checked})
        summary = ", ".join(f"{c} x{sum(d[0] == c for d in checked)}" for c in codes)
        print(f"{os.path.basename(path)}: {summary or 'no diagnostics'}")
        if served != checked:
            failed = True
            print("  the language server differs from check:")
            for d in served:
                if d not in checked:
                    print(f"    only lsp:   {d}")
            for d in checked:
                if d not in served:
                    print(f"    only check: {d}")
    print(f"{len(files)} files compared")
    client.request("shutdown", None)
    client.notify("exit", None)
    if client.proc.wait(timeout=30) != 0:
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
