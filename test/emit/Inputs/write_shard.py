#!/usr/bin/env python3
"""Writes one token shard (docs/data-format.md), whole or broken, for tests.

  write_shard.py FILE TOKENS [--width 2|4] [--magic avft|llmc16|llmc32|NUMBER]
                 [--version N] [--size BYTES]

The header says TOKENS tokens of --width bytes (default 2; aviflow's header:
the width in word 2, the count in words 4-5; llm.c's hold the count in word 2,
and llmc32 defaults to 4 bytes). The tokens are 0, 1, 2, ...
--size cuts the file to (or pads it with zeros up to) BYTES bytes.
"""
import argparse
import struct
import sys

MAGICS = {"avft": (0x54465641, 1), "llmc16": (20240520, 1), "llmc32": (20240801, 7)}


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("tokens", type=int)
    p.add_argument("--width", type=int)
    p.add_argument("--magic", default="avft")
    p.add_argument("--version", type=int)
    p.add_argument("--size", type=int)
    a = p.parse_args(argv[1:])
    magic, version = MAGICS[a.magic] if a.magic in MAGICS else (int(a.magic, 0), 1)
    llmc = a.magic in ("llmc16", "llmc32")
    if a.width is None:
        a.width = 4 if a.magic == "llmc32" else 2
    words = [0] * 256
    words[0] = magic
    words[1] = version if a.version is None else a.version
    if llmc:
        words[2] = a.tokens
    else:
        words[2] = a.width
        words[4] = a.tokens & 0xFFFFFFFF
        words[5] = a.tokens >> 32
    data = struct.pack("<256I", *words)
    fmt = "<H" if a.width == 2 else "<I"
    tokens = a.tokens if a.size is None else min(a.tokens, max(0, a.size - len(data)) // a.width + 1)
    data += b"".join(struct.pack(fmt, i % (1 << (8 * a.width))) for i in range(tokens))
    if a.size is not None:
        data = data[: a.size] + b"\0" * max(0, a.size - len(data))
    with open(a.file, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
