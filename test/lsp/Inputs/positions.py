"""Positions in UTF-16 code units (LSP's default) and in UTF-8 bytes (when the
client offers it), for diagnostics and incremental edits of `aviflowc lsp`,
on a line with a two-byte and a four-byte character before the error.
Prints one `PASS <case>` line per case. Usage: positions.py AVIFLOWC DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lsp_client import Client  # noqa: E402

aviflowc, folder = sys.argv[1], sys.argv[2]
uri = "file://" + os.path.abspath(os.path.join(folder, "pod.avf"))
prefix = 'cluster pod { labels = ["é😀"]; node = '
text = 'import "std/hardware"\n\n' + prefix + 'hgx_a10; nodes=1; network = ib_ndr }\n'


def units(s, encoding):
    return len(s.encode("utf-16-le")) // 2 if encoding == "utf-16" else len(s.encode())


def check(encoding):
    c = Client([aviflowc, "lsp"])
    offered = {"general": {"positionEncodings": ["utf-8"]}} if encoding == "utf-8" else {}
    reply = c.request("initialize", {"processId": None, "capabilities": offered})
    assert reply["result"]["capabilities"]["positionEncoding"] == encoding, reply
    c.notify("initialized", {})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "avf", "version": 1, "text": text}})
    [d] = [d for d in c.diagnostics(uri, version=1) if d["code"] == "E0402"]
    start = units(prefix, encoding)
    assert d["range"] == {"start": {"line": 2, "character": start}, "end": {"line": 2, "character": start + 7}}, d
    print("PASS", encoding, "diagnostic range", flush=True)

    # Two edits in one notification, applied in order: the typo fixed, then a
    # character inserted between the emoji and the closing quote.
    emoji_end = units('cluster pod { labels = ["é😀', encoding)
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 2, "character": start + 7}, "end": {"line": 2, "character": start + 7}},
         "text": "0"},
        {"range": {"start": {"line": 2, "character": emoji_end}, "end": {"line": 2, "character": emoji_end}},
         "text": "x"}]})
    codes = [d["code"] for d in c.diagnostics(uri, version=2)]
    assert "E0402" not in codes, codes
    reply = c.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {}})
    [edit] = reply["result"]
    assert 'labels = ["é😀x"]' in edit["newText"] and "node = hgx_a100; nodes = 1;" in edit["newText"], edit
    assert edit["range"]["end"] == {"line": 3, "character": 0}, edit
    print("PASS", encoding, "incremental edits", flush=True)

    # A full replacement (no range) and hover on the field after the emoji.
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                        "contentChanges": [{"text": text}]})
    c.diagnostics(uri, version=3)
    reply = c.request("textDocument/hover", {"textDocument": {"uri": uri},
                                             "position": {"line": 2, "character": start - 5}})
    assert reply["result"]["contents"]["value"].startswith("**node**"), reply
    assert reply["result"]["range"]["start"] == {"line": 2, "character": start - 7}, reply
    print("PASS", encoding, "hover after a full change", flush=True)
    c.request("shutdown", None)
    c.notify("exit", None)
    assert c.proc.wait(timeout=30) == 0


check("utf-16")
check("utf-8")

# A note with a place is related information; the fix-it that removes a
# duplicate import is a quick fix whose edit deletes its line.
c = Client([aviflowc, "lsp"])
c.request("initialize", {"processId": None, "capabilities": {}})
c.notify("initialized", {})
dup = 'import "std/hardware"\nimport "std/hardware"\n\ncluster pod { node = hgx_a100; nodes = 1; network = ib_ndr }\n'
c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "avf", "version": 1, "text": dup}})
[d] = c.diagnostics(uri, version=1)
assert d["code"] == "W0303" and d["severity"] == 2, d
[related] = d["relatedInformation"]
assert related["message"] == "first imported here" and related["location"]["uri"] == uri, related
assert related["location"]["range"]["start"] == {"line": 0, "character": 7}, related
reply = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "context": {"diagnostics": []},
                                              "range": {"start": {"line": 1, "character": 0},
                                                        "end": {"line": 1, "character": 0}}})
[action] = reply["result"]
assert action["kind"] == "quickfix" and action["diagnostics"][0]["code"] == "W0303", action
assert action["edit"]["changes"][uri] == [{"range": {"start": {"line": 1, "character": 0},
                                                     "end": {"line": 2, "character": 0}}, "newText": ""}], action
reply = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "context": {"diagnostics": []},
                                              "range": {"start": {"line": 3, "character": 0},
                                                        "end": {"line": 3, "character": 5}}})
assert reply["result"] == [], reply
print("PASS related information and a fix-it that removes a line", flush=True)

# A document that does not parse still gets hover, completion and
# definitions where the tokens around the position make sense.
broken = 'import "std/hardware"\n\ncluster pod {\n  node = hgx_a100\n  nodes = = 3\n  network = \n}\n'
c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "avf", "version": 2, "text": broken}})
codes = [d["code"] for d in c.diagnostics(uri, version=2)]
assert codes and all(code.startswith("E02") for code in codes), codes
reply = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 3}})
assert reply["result"]["contents"]["value"].startswith("**node**: a `node`"), reply
reply = c.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": {"line": 5, "character": 12}})
labels = [item["label"] for item in reply["result"]["items"]]
assert "ib_ndr" in labels and "hgx_a100" not in labels, labels
reply = c.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": {"line": 5, "character": 2}})
labels = [item["label"] for item in reply["result"]["items"]]
assert labels[:3] == ["node", "nodes", "network"], labels
reply = c.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 10}})
assert reply["result"]["uri"].endswith("/hardware.avf"), reply
reply = c.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {}})
assert reply["result"] is None, reply
print("PASS a document with syntax errors", flush=True)

# Go to definition across a relative import, of `decl.field`, and on the
# import's path.
with open(os.path.join(folder, "lib.avf"), "w") as f:
    f.write('import "std/hardware"\n\ncluster shared_pod { node = hgx_a100; nodes = 2; network = ib_ndr }\n')
main = 'import "./lib.avf"\n\ncluster mine : shared_pod { nodes = shared_pod.nodes }\n'
c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "avf", "version": 5, "text": main}})
c.diagnostics(uri, version=5)
lib_uri = "file://" + os.path.abspath(os.path.join(folder, "lib.avf"))
reply = c.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 18}})
assert reply["result"] == {"uri": lib_uri, "range": {"start": {"line": 2, "character": 8},
                                                     "end": {"line": 2, "character": 18}}}, reply
reply = c.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 10}})
assert reply["result"]["uri"] == lib_uri and reply["result"]["range"]["start"] == {"line": 0, "character": 0}, reply
reply = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 18}})
assert "cluster `shared_pod`, declared in" in reply["result"]["contents"]["value"], reply
reply = c.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 48}})
assert reply["result"]["uri"] == lib_uri and reply["result"]["range"]["start"] == {"line": 2, "character": 38}, reply
print("PASS definition across a relative import", flush=True)

# A diagnostic in an imported file is shown on the import that leads to it,
# with the place in that file as related information.
with open(os.path.join(folder, "lib.avf"), "w") as f:
    f.write('import "std/hardware"\n\ncluster shared_pod { node = hgx_a10; nodes = 2; network = ib_ndr }\n')
c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "avf", "version": 6,
                                                   "text": "// the pods\n" + main}})
[d] = c.diagnostics(uri, version=6)
assert d["code"] == "E0402" and d["range"]["start"] == {"line": 1, "character": 0}, d
assert d["message"].startswith("unknown name `hgx_a10` (in %s line 3)" % lib_uri), d
assert d["relatedInformation"][0]["location"]["uri"] == lib_uri, d
print("PASS a diagnostic in an imported file", flush=True)

# Closing a document clears its diagnostics; requests on it then get null.
c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
assert c.diagnostics(uri) == []
reply = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 2}})
assert reply["result"] is None, reply
reply = c.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
assert reply["result"] is None, reply
print("PASS a closed document", flush=True)
