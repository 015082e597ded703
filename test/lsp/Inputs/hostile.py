"""Hostile input for `aviflowc lsp`, spoken in raw frames: each case gets an
LSP error or is ignored, and the server still answers afterwards. Prints one
`PASS <case>` line per case; any failure raises (non-zero exit).
Usage: hostile.py AVIFLOWC JOB.avf BIG (the large document has 10 x BIG bytes)"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lsp_client import Client  # noqa: E402

aviflowc, job_path, big_bytes = sys.argv[1], sys.argv[2], 10 * int(sys.argv[3])
job_text = open(job_path, encoding="utf-8").read()
uri = "file://" + os.path.abspath(job_path)


def error_code(reply):
    assert "error" in reply, "expected an error, got %r" % reply
    return reply["error"]["code"]


def alive(c):
    reply = c.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert isinstance(reply.get("result"), list), reply


def answered_with_null_id(c, code):
    reply = c.wait(lambda m: "id" in m and m["id"] is None)
    assert error_code(reply) == code, reply


def start(encodings=None):
    c = Client([aviflowc, "lsp"])
    general = {"positionEncodings": encodings} if encodings else {}
    reply = c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {"general": general}})
    c.notify("initialized", {})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "avf", "version": 1, "text": job_text}})
    c.diagnostics(uri)
    return c, reply


def case(name):
    print("PASS", name, flush=True)


c = Client([aviflowc, "lsp"])
assert error_code(c.request("textDocument/hover", {})) == -32002
case("a request before initialize")
c.proc.stdin.close()
assert c.proc.wait(timeout=30) == 1
case("stdin closed before shutdown: exit status 1")

c, reply = start(["utf-8", "utf-16"])
assert reply["result"]["capabilities"]["positionEncoding"] == "utf-8", reply
case("utf-8 negotiated")

c.send_raw(b"Content-Length: abc\r\n\r\n")
answered_with_null_id(c, -32600)
alive(c)
case("a Content-Length that is not a number")

c.send_raw(b"Content-Type: application/vscode-jsonrpc\r\n\r\n")
answered_with_null_id(c, -32600)
alive(c)
case("a header without Content-Length")

c.send_raw(b"Content-Length: 5\r\n\r\nhello")
answered_with_null_id(c, -32700)
alive(c)
case("a body that is not JSON")

c.send_raw(b"Content-Length: 5\r\n\r\n[1,2]")
answered_with_null_id(c, -32600)
alive(c)
case("a body that is not an object")

body = b'{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{"x":"\xff\xfe"}}'
c.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
answered_with_null_id(c, -32700)
alive(c)
case("invalid UTF-8 in a frame")

c.send_raw(b"X-Junk: " + b"x" * (1 << 20) + b"\r\n\r\n")
answered_with_null_id(c, -32600)
alive(c)
case("a 1 MB header line")

body = b'{"jsonrpc":"2.0","id":8,"method":"shutdown"}'
c.send_raw(b"Content-Length: 10\r\n\r\n" + body)
answered_with_null_id(c, -32700)
alive(c)
case("a Content-Length shorter than the body")

bad = [
    ({"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}}, -32602),
    ({"textDocument": {"uri": uri}, "position": {"line": "x", "character": 0}}, -32602),
    ({"textDocument": {"uri": uri}}, -32602),
    ({}, -32602),
]
for params, code in bad:
    assert error_code(c.request("textDocument/hover", params)) == code
for line, character in [(10**9, 0), (0, 10**9), (2**62, 2**62)]:
    reply = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
    assert "result" in reply, reply
    reply = c.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
    assert "result" in reply, reply
    reply = c.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
    assert "result" in reply, reply
reply = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {"start": {"line": 5}}})
assert error_code(reply) == -32602
alive(c)
case("positions out of range or malformed")

assert error_code(c.request("workspace/frobnicate", {})) == -32601
c.notify("$/frobnicate", {"x": 1})
c.send({"jsonrpc": "2.0", "id": {"nested": 1}, "method": "shutdown"})
answered_with_null_id(c, -32600)
alive(c)
case("unknown methods and a bad id")

other = uri + ".other.avf"
c.notify("textDocument/didOpen", {"textDocument": {"uri": other, "languageId": "avf", "version": 1, "text": "job x {}"}})
c.diagnostics(other)
c.notify("textDocument/didChange", {"textDocument": {"uri": other, "version": 2},
                                    "contentChanges": [{"range": {"start": {"line": 99, "character": 0},
                                                                  "end": {"line": 99, "character": 1}}, "text": "x"}]})
log = c.wait(lambda m: m.get("method") == "window/logMessage")
assert "outside the document" in log["params"]["message"], log
alive(c)
case("an edit outside the document")

c.notify("textDocument/didOpen", {"textDocument": {"uri": other, "languageId": "avf", "version": 3,
                                                   "text": "job x {\u0000}\n"}})
codes = [d["code"] for d in c.diagnostics(other, version=3)]
assert codes == ["E0004"], codes
c.notify("textDocument/didOpen", {"textDocument": {"uri": other, "languageId": "avf", "version": 4,
                                                   "text": "job \ud800 {}\n"}})
codes = [d["code"] for d in c.diagnostics(other, version=4)]
assert codes and all(code.startswith("E") for code in codes), codes
case("a NUL byte and a lone surrogate in a document")

# 10 MB: the job file, then its cluster, storage and dataset again and again
# under new names (no job: the one job is planned once); then one
# incremental edit.
copy = job_text[job_text.index("cluster pod"):job_text.index("job pretrain")].replace("hgx_a10\n", "hgx_a100\n")
for name in ("pod", "cold", "docs"):
    copy = copy.replace(" %s " % name, " %s%%d " % name).replace("= %s /" % name, "= %s%%d /" % name)
big = job_text + "".join(copy.replace("%d", str(i)) for i in range(big_bytes // len(copy) + 1))
big_uri = uri + ".big.avf"
started = time.time()
c.notify("textDocument/didOpen", {"textDocument": {"uri": big_uri, "languageId": "avf", "version": 1, "text": big}})
c.diagnostics(big_uri, version=1, timeout=300)
opened = time.time() - started
started = time.time()
c.notify("textDocument/didChange", {"textDocument": {"uri": big_uri, "version": 2},
                                    "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                                                  "end": {"line": 0, "character": 0}}, "text": "// x\n"}]})
c.diagnostics(big_uri, version=2, timeout=300)
changed = time.time() - started
alive(c)
sys.stderr.write("%d-byte document: didOpen %.1f s, didChange %.1f s to its diagnostics\n"
                 % (len(big.encode()), opened, changed))
case("a large document")

c.send_raw(b"Content-Length: 1000000000000\r\n\r\n")
answered_with_null_id(c, -32600)
c.proc.stdin.close()
assert c.proc.wait(timeout=30) == 1
case("a Content-Length of 1 TB, then stdin closed")

c, _ = start()
reply = c.request("shutdown", None)
assert reply.get("result", "missing") is None, reply
assert error_code(c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})) == -32600
c.notify("exit", None)
assert c.proc.wait(timeout=30) == 0
case("shutdown, then exit: status 0")
