#!/usr/bin/env python3
"""Checks runtime/trainers/avf_megatron_data.py against Megatron-LM's own reader.

    python3 tools/check_megatron_data.py MEGATRON_CHECKOUT

MEGATRON_CHECKOUT is a checkout of the pinned release (core_v0.15.3) with
its dataset helpers built (`make -C megatron/core/datasets`); the Python
needs numpy and torch (only the dataset modules are imported, so an old
CPU torch does). The check writes token shards, indexes them, and reads them
through Megatron-LM's IndexedDataset and the blend pretrain_gpt.py builds
from --data-args-path: every sample must be seq_len + 1 consecutive tokens
of one shard, each shard's windows trained in proportion to its tokens.
Prints what it checked; exits 1 on the first difference.
"""

import os
import random
import struct
import sys
import tempfile
import types
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runtime", "trainers"))

import avf_megatron_data  # noqa: E402
import avf_shards  # noqa: E402


def import_megatron(checkout):
    """Megatron-LM's dataset modules, without megatron.core's __init__ (which needs a new torch)."""
    for name, path in [("megatron", "megatron"), ("megatron.core", "megatron/core")]:
        module = types.ModuleType(name)
        module.__path__ = [os.path.join(checkout, path)]
        sys.modules[name] = module
    import megatron.core.parallel_state  # noqa: F401  (before utils: they import each other)
    from megatron.core.datasets import blended_megatron_dataset_builder as builder
    from megatron.core.datasets import gpt_dataset, indexed_dataset, utils

    return builder, gpt_dataset, indexed_dataset, utils


def write_shard(path, tokens, width):
    header = bytearray(avf_shards.HEADER_BYTES)
    struct.pack_into("<4I", header, 0, avf_shards.AVIFLOW_MAGIC, avf_shards.AVIFLOW_VERSION, width, 0)
    struct.pack_into("<Q", header, 16, len(tokens))
    with open(path, "wb") as f:
        f.write(header)
        f.write(struct.pack(f"<{len(tokens)}{'H' if width == 2 else 'I'}", *tokens))


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


class Tokens:
    """The null tokenizer's special ids, as pretrain_gpt.py's NullTokenizer gives them."""

    def __init__(self, vocab):
        self.eod = vocab - 1
        self.pad = -1
        self.unique_identifiers = {"class": "NullTokenizer", "vocab_size": vocab}


def check_indexed(indexed_dataset, prefix, want, limit):
    ds = indexed_dataset.IndexedDataset(prefix)
    got = [int(t) for i in range(len(ds)) for t in ds[i]]
    if got != want:
        fail(f"{prefix}: Megatron-LM reads {len(got)} tokens that differ from the shard's {len(want)}")
    pieces = len(avf_megatron_data.sequence_lengths(len(want), limit))
    if len(ds) != pieces:
        fail(f"{prefix}: {len(ds)} sequences, expected {pieces}")


K = 6  # a run of random tokens this long occurs once in the test data


def documents(shards, limit):
    """(shard, tokens) of every sequence the index describes: Megatron-LM's documents."""
    docs = []
    for index, tokens in enumerate(shards):
        at = 0
        for n in avf_megatron_data.sequence_lengths(len(tokens), limit):
            docs.append((index, tokens[at : at + n]))
            at += n
    return docs


def kgram_index(docs):
    where = {}
    for d, (_, tokens) in enumerate(docs):
        for off in range(len(tokens) - K + 1):
            key = tuple(tokens[off : off + K])
            where[key] = None if key in where else (d, off)
    return where


def shard_of(tokens, docs, where, i):
    """The shard whose documents sample `i` runs through: consecutive tokens of one document,
    continuing at the start of another of the same shard where one ends (Megatron-LM
    concatenates documents, and an epoch's last sample runs into the next epoch)."""
    at, shard = 0, None
    while at < len(tokens):
        rest = tokens[at:]
        if len(rest) >= K:
            loc = where.get(tuple(rest[:K]))
            if loc is None and shard is None:  # the sample may start within a document's last K tokens
                loc = next(((d, len(doc) - m) for m in range(1, K) for d, (_, doc) in enumerate(docs)
                            if doc[-m:] == rest[:m]), None)
        else:
            loc = next(((d, 0) for d, (s, doc) in enumerate(docs) if s == shard and doc[: len(rest)] == rest), None)
        if loc is None:
            fail(f"sample {i}: tokens {at}.. are no run of a document's tokens")
        d, off = loc
        if shard is not None and (docs[d][0] != shard or off != 0):
            fail(f"sample {i}: after a document's end, token {at} does not start a document of the same shard")
        shard, doc = docs[d]
        n = min(len(doc) - off, len(rest))
        if rest[:n] != doc[off : off + n]:
            fail(f"sample {i}: tokens {at}..{at + n - 1} differ from the document they start")
        at += n
    return shard


def check_blend(modules, out_dir, shards, seq_len, samples, vocab, limit):
    builder, gpt_dataset, _, utils = modules
    with open(os.path.join(out_dir, avf_megatron_data.DATA_ARGS)) as f:
        blend = utils.get_blend_from_list(f.read().split())
    config = gpt_dataset.GPTDatasetConfig(
        random_seed=1234, sequence_length=seq_len, blend=blend, split="100,0,0",
        path_to_cache=os.path.join(out_dir, "cache"), tokenizer=Tokens(vocab),
        reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False)
    train, _, _ = builder.BlendedMegatronDatasetBuilder(
        gpt_dataset.GPTDataset, [samples, 100, 100], lambda: True, config).build()
    docs = documents(shards, limit)
    where = kgram_index(docs)
    drawn = Counter()
    for i in range(samples):
        sample = train[i]
        tokens = [int(t) for t in sample["tokens"]] + [int(sample["labels"][-1])]
        if len(tokens) != seq_len + 1:
            fail(f"sample {i} holds {len(tokens)} tokens, not seq_len + 1 = {seq_len + 1}")
        drawn[shard_of(tokens, docs, where, i)] += 1
    total = sum(len(t) for t in shards)
    for index, tokens in enumerate(shards):
        share, want = drawn[index] / samples, len(tokens) / total
        if abs(share - want) > 0.02:
            fail(f"shard {index} holds {want:.3f} of the tokens but gives {share:.3f} of the samples")
    return drawn


def run_case(modules, width, sizes, limit, vocab, seq_len=16, samples=600):
    rng = random.Random(width * 1000 + len(sizes))
    shards = [[rng.randrange(vocab) for _ in range(n)] for n in sizes]
    with tempfile.TemporaryDirectory() as tmp:
        data, out = os.path.join(tmp, "data"), os.path.join(tmp, "megatron")
        os.makedirs(data)
        for i, tokens in enumerate(shards):
            write_shard(os.path.join(data, avf_shards.shard_file_name(i)), tokens, width)
        avf_megatron_data.write_megatron_view(data, out, limit)
        for i, tokens in enumerate(shards):
            prefix = os.path.join(out, avf_shards.shard_file_name(i)[: -len(".bin")])
            check_indexed(modules[2], prefix, tokens, limit)
        drawn = check_blend(modules, out, shards, seq_len, samples, vocab, limit)
    print(f"ok: {len(sizes)} shards of {width}-byte tokens {sizes}, sequences of at most {limit} tokens: "
          f"Megatron-LM reads every token; {samples} samples drawn per shard {dict(sorted(drawn.items()))}")


def main(argv):
    if len(argv) != 2 or not os.path.isdir(os.path.join(argv[1], "megatron", "core", "datasets")):
        print(__doc__, file=sys.stderr)
        return 2
    modules = import_megatron(os.path.abspath(argv[1]))
    import torch.distributed

    # One rank, as rank 0 of a job builds (and caches) the blend first.
    with tempfile.TemporaryDirectory() as tmp:
        torch.distributed.init_process_group("gloo", init_method=f"file://{tmp}/store", rank=0, world_size=1)
        run_case(modules, 2, [4000, 1500, 2600], 2**31 - 1, 50257)
        run_case(modules, 4, [3000, 3500], 2**31 - 1, 128256)
        run_case(modules, 2, [5000, 1200], 700, 32000)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
