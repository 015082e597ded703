#!/usr/bin/env python3
"""Reads a Megatron-LM view of token shards as Megatron-LM's IndexedDataset does.

  read_megatron_view.py DATA_DIR VIEW_DIR

VIEW_DIR/data_args holds `WEIGHT PREFIX` pairs; each PREFIX.idx is
"MMIDIDX\\0\\0", <Q version, <B dtype code, <Q sequences, <Q documents, the
int32 lengths, the int64 byte pointers into PREFIX.bin and the int64
document indices. Every token read through the index must be the shard's
(DATA_DIR/shard_NNNNNN.bin from byte 1024), in order, and every weight its
token count. Prints a summary; exits 1 naming the first difference.
"""
import os
import struct
import sys

DTYPES = {8: ("H", 2), 4: ("i", 4)}


def read_index(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:9] != b"MMIDIDX\x00\x00":
        raise SystemExit(f"{path}: not an MMIDIDX index")
    version, code = struct.unpack_from("<QB", data, 9)
    sequences, documents = struct.unpack_from("<QQ", data, 18)
    at = 34
    lengths = struct.unpack_from(f"<{sequences}i", data, at)
    at += 4 * sequences
    pointers = struct.unpack_from(f"<{sequences}q", data, at)
    at += 8 * sequences
    doc_index = struct.unpack_from(f"<{documents}q", data, at)
    at += 8 * documents
    if version != 1 or code not in DTYPES or at != len(data):
        raise SystemExit(f"{path}: version {version}, dtype {code}, {len(data) - at} bytes left over")
    if list(doc_index) != list(range(sequences + 1)):
        raise SystemExit(f"{path}: document indices {doc_index[:5]}..., not one document per sequence")
    return code, lengths, pointers


def main(argv):
    data_dir, view = argv[1], argv[2]
    words = open(os.path.join(view, "data_args")).read().split()
    pairs = list(zip(words[0::2], words[1::2]))
    tokens_total = sequences_total = 0
    for weight, prefix in pairs:
        code, lengths, pointers = read_index(prefix + ".idx")
        fmt, width = DTYPES[code]
        with open(prefix + ".bin", "rb") as f:
            blob = f.read()
        got = []
        for n, p in zip(lengths, pointers):
            got += struct.unpack_from(f"<{n}{fmt}", blob, p)
        name = os.path.basename(prefix) + ".bin"
        with open(os.path.join(data_dir, name), "rb") as f:
            raw = f.read()[1024:]
        want = list(struct.unpack(f"<{len(raw) // width}{'H' if width == 2 else 'I'}", raw))
        if got != want:
            raise SystemExit(f"{prefix}: the index reads {len(got)} tokens, not the shard's {len(want)}")
        if int(weight) != len(want):
            raise SystemExit(f"{prefix}: weight {weight}, but the shard holds {len(want)} tokens")
        tokens_total += len(want)
        sequences_total += len(lengths)
    print(f"{len(pairs)} shards, {tokens_total} tokens in {sequences_total} sequences: "
          "every token read through the index")


if __name__ == "__main__":
    main(sys.argv)
