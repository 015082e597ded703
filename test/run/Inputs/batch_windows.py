"""Writes, as one token shard, the windows of the first global batch of a
dataset (docs/data-format.md "The order of training": sequence j is tokens
j*T .. j*T + T), so that `avf-run checkpoint eval` on it computes the loss a
training run's first step reports for the same weights.

Usage: batch_windows.py DATASET_DIR SEQ_LEN GLOBAL_BATCH OUT_FILE
"""
import glob
import struct
import sys


def main():
    data, seq, batch, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    tokens = []
    for path in sorted(glob.glob(data + "/shard_*.bin")):
        raw = open(path, "rb").read()
        words = struct.unpack("<256I", raw[:1024])
        assert words[0] == 0x54465641 and words[2] == 2, path
        count = words[4] | words[5] << 32
        tokens += struct.unpack(f"<{count}H", raw[1024:1024 + 2 * count])
    windows = [t for j in range(batch) for t in tokens[j * seq:j * seq + seq + 1]]
    header = [0] * 256
    header[0], header[1], header[2], header[4] = 0x54465641, 1, 2, len(windows)
    with open(out, "wb") as f:
        f.write(struct.pack("<256I", *header) + struct.pack(f"<{len(windows)}H", *windows))


if __name__ == "__main__":
    main()
