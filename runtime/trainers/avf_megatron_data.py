"""Megatron-LM's view of aviflowc's token shards, without copying a token.

    python3 avf_megatron_data.py DATA_DIR OUT_DIR

Megatron-LM reads an indexed dataset: PREFIX.bin holding tokens and
PREFIX.idx giving each sequence's length and byte offset in it. A token shard
is such a .bin already, its tokens 1024 bytes in. So for every shard this
writes OUT_DIR/shard_NNNNNN.idx, whose offsets skip the header, and the link
OUT_DIR/shard_NNNNNN.bin to the shard itself; and OUT_DIR/data_args, the
`--data-path` words naming every shard weighted by its tokens (read with
`--data-args-path`): Megatron-LM blends the shards in proportion, each shard's
samples its own.

A shard of more than 2^31 - 1 tokens (the index holds int32 lengths) is
described as several sequences. The index of 4-byte tokens says int32: the
index has no uint32, and ids below 2^31 read the same.

Files are written to a temporary name and renamed, so a run that finds the
folder sees whole files; running it again gives the same bytes.
"""

import os
import struct
import sys

import avf_shards

INDEX_HEADER = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
DTYPE_CODES = {2: 8, 4: 4}  # bytes per token -> Megatron-LM's DType: uint16, int32
MAX_SEQUENCE_TOKENS = 2**31 - 1
DATA_ARGS = "data_args"


def sequence_lengths(tokens, limit=MAX_SEQUENCE_TOKENS):
    """A shard's tokens as sequences of at most `limit` tokens each."""
    lengths = [limit] * (tokens // limit)
    if tokens % limit:
        lengths.append(tokens % limit)
    return lengths


def index_bytes(shard, limit=MAX_SEQUENCE_TOKENS):
    """The .idx of one shard: one document per sequence, offsets past the header."""
    lengths = sequence_lengths(shard.tokens, limit)
    pointers, at = [], avf_shards.HEADER_BYTES
    for n in lengths:
        pointers.append(at)
        at += n * shard.width
    out = bytearray(INDEX_HEADER)
    out += struct.pack("<QB", INDEX_VERSION, DTYPE_CODES[shard.width])
    out += struct.pack("<QQ", len(lengths), len(lengths) + 1)
    out += struct.pack(f"<{len(lengths)}i", *lengths)
    out += struct.pack(f"<{len(pointers)}q", *pointers)
    out += struct.pack(f"<{len(lengths) + 1}q", *range(len(lengths) + 1))
    return bytes(out)


def write_file(path, data):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def link(target, path):
    tmp = f"{path}.tmp.{os.getpid()}"
    os.symlink(target, tmp)
    os.replace(tmp, path)


def write_megatron_view(data_dir, out_dir, limit=MAX_SEQUENCE_TOKENS):
    """Writes the view of every shard of `data_dir` into `out_dir`; returns the shards."""
    shards = avf_shards.list_shards(data_dir)
    os.makedirs(out_dir, exist_ok=True)
    words = []
    for shard in shards:
        prefix = os.path.join(out_dir, os.path.basename(shard.path)[: -len(".bin")])
        if shard.tokens == 0:
            continue  # nothing to blend; Megatron-LM refuses an empty dataset
        write_file(prefix + ".idx", index_bytes(shard, limit))
        link(os.path.abspath(shard.path), prefix + ".bin")
        words += [str(shard.tokens), prefix]
    if not words:
        raise avf_shards.ShardError(f"{data_dir}: every shard is empty")
    write_file(os.path.join(out_dir, DATA_ARGS), (" ".join(words) + "\n").encode())
    return shards


def main(argv):
    if len(argv) != 3:
        print("usage: avf_megatron_data.py DATA_DIR OUT_DIR", file=sys.stderr)
        return 2
    try:
        shards = write_megatron_view(argv[1], argv[2])
    except (avf_shards.ShardError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    tokens = sum(s.tokens for s in shards)
    print(f"{len(shards)} shards of {argv[1]} ({tokens} tokens) indexed for Megatron-LM in {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
