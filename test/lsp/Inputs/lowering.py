"""Lowering's diagnostics as the document changes: pods that ask for
`memory = 2TiB` on nodes of `cpu_memory = 2TB` get E0904 at `2TiB`, with the
note at the node's memory as related information and the unit hint; once
the edit asks for 1TiB the diagnostic is gone. Prints one `PASS <case>` line
per case. Usage: lowering.py AVIFLOWC FILE"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lsp_client import Client  # noqa: E402

aviflowc, path = sys.argv[1], os.path.abspath(sys.argv[2])
uri = "file://" + path
text = open(path, encoding="utf-8").read()
c = Client([aviflowc, "lsp"])
c.request("initialize", {"processId": None, "capabilities": {}})
c.notify("initialized", {})
c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "avf", "version": 1, "text": text}})
[d] = c.diagnostics(uri, version=1)
line = next(i for i, s in enumerate(text.split("\n")) if s.strip().startswith("memory = 2TiB"))
column = text.split("\n")[line].index("2TiB")
assert d["code"] == "E0904" and d["severity"] == 1, d
assert d["range"] == {"start": {"line": line, "character": column}, "end": {"line": line, "character": column + 4}}, d
assert d["message"].startswith("job `train` asks for 2.2TB of memory per pod, but a `box` node has 2TB\nhelp: "), d
[related] = d["relatedInformation"]
assert related["message"] == "node `box` declares `cpu_memory = 2TB`" and related["location"]["uri"] == uri, related
print("PASS E0904 when the document is opened", flush=True)

c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
    {"range": {"start": {"line": line, "character": column}, "end": {"line": line, "character": column + 1}},
     "text": "1"}]})
assert c.diagnostics(uri, version=2) == []
print("PASS no diagnostic once the pods fit", flush=True)
c.request("shutdown", None)
c.notify("exit", None)
assert c.proc.wait(timeout=30) == 0
