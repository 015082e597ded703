"""A minimal LSP client over a child's standard input and output, for the
tests of `aviflowc lsp`: raw frames in, parsed messages out (a reader thread
puts them on a queue, so that every wait has a time limit)."""
import json
import queue
import subprocess
import threading
import time


class Client:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.messages = queue.Queue()
        self.next_id = 1000
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            self.messages.put(json.loads(out.read(length)))

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message):
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, timeout=60):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == self.next_id and "method" not in m, timeout)

    def wait(self, accept, timeout=60):
        """The first message `accept` takes; those before it are dropped."""
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("no answer within %s s" % timeout)
            try:
                m = self.messages.get(timeout=left)
            except queue.Empty:
                raise AssertionError("no answer within %s s" % timeout)
            if m is None:
                raise AssertionError("the server closed its output")
            if accept(m):
                return m

    def diagnostics(self, uri, version=None, timeout=60):
        """The next diagnostics of `uri` (of that version of it, if given)."""
        def accept(m):
            return (m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                    and (version is None or m["params"].get("version") == version))
        m = self.wait(accept, timeout)
        return m["params"]["diagnostics"]
