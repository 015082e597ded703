"""Writes N windows of seq_len + 1 tokens of a dataset as one token shard, so
that `avf-run checkpoint eval` on it reads exactly those windows:
  sequences  the first N training sequences (sequence j is tokens j*T .. j*T + T,
             docs/data-format.md "The order of training": a first global batch)
  windows    the first N disjoint windows (window i is tokens i*(T+1) .. i*(T+1) + T,
             what a validation of N sequences reads)

Usage: window_shard.py sequences|windows DATASET_DIR SEQ_LEN N OUT_FILE
"""
import glob
import struct
import sys


def main():
    kind, data, seq, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    tokens = []
    for path in sorted(glob.glob(data + "/shard_*.bin")):
        raw = open(path, "rb").read()
        words = struct.unpack("<256I", raw[:1024])
        assert words[0] == 0x54465641 and words[2] == 2, path
        count = words[4] | words[5] << 32
        tokens += struct.unpack(f"<{count}H", raw[1024:1024 + 2 * count])
    stride = seq if kind == "sequences" else seq + 1
    windows = [t for j in range(n) for t in tokens[j * stride:j * stride + seq + 1]]
    assert len(windows) == n * (seq + 1), (len(tokens), n, seq)
    header = [0] * 256
    header[0], header[1], header[2], header[4] = 0x54465641, 1, 2, len(windows)
    with open(out, "wb") as f:
        f.write(struct.pack("<256I", *header) + struct.pack(f"<{len(windows)}H", *windows))


if __name__ == "__main__":
    main()
