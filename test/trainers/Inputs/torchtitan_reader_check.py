#!/usr/bin/env python3
"""Drives runtime/trainers/avf_token_shards.py as torchtitan 0.2.2 does, with doubles.

  torchtitan_reader_check.py TRAINERS_DIR KEYS_DEF TOML TABLES_JSON DATA_DIR

The job config is the TOML that aviflowc wrote, holding only keys that
torchtitan 0.2.2 defines (KEYS_DEF): reading any other fails. For every data
rank the dataloader must yield, step after step and across epochs, the
sequences avf-run's data rank trains (docs/data-format.md; the data slices
that `avf-run check-plan --tables` derives from the plan: TABLES_JSON), each
as inputs and the targets shifted by one. Prints one line
per check; exits 1 at the first difference.
"""
import dataclasses
import json
import os
import re
import struct
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "doubles"))
sys.path.insert(1, sys.argv[1])

import avf_shards  # noqa: E402
import avf_token_shards  # noqa: E402
from torchtitan.protocols.train_spec import registered  # noqa: E402

DEFAULTS = {"training.global_batch_size": -1, "training.dataloader.num_workers": 0,
            "training.dataloader.persistent_workers": False, "training.dataloader.pin_memory": False,
            "training.dataloader.prefetch_factor": None}


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def job_config(keys_def, toml_path):
    """Nested dataclasses of exactly torchtitan's keys, valued from the TOML or its defaults."""
    keys = re.findall(r'TORCHTITAN_KEY\("([^"]+)"\)', open(keys_def).read())
    given = {}
    for table, values in tomllib.load(open(toml_path, "rb")).items():
        for key, value in values.items():
            given[f"{table}.{key}"] = value

    def build(prefix):
        children = sorted({k[len(prefix):].split(".")[0] for k in keys if k.startswith(prefix)})
        fields = {}
        for c in children:
            path = prefix + c
            fields[c] = given.get(path, DEFAULTS.get(path)) if path in keys else build(path + ".")
        cls = dataclasses.make_dataclass(prefix.strip(".").replace(".", "_") or "JobConfig", list(fields))
        return cls(**fields)

    unknown = [k for k in given if k not in keys]
    if unknown:
        fail(f"the TOML holds keys torchtitan 0.2.2 does not define: {unknown}")
    return build("")


def write_shard(path, tokens):
    header = struct.pack("<256I", avf_shards.AVIFLOW_MAGIC, 1, 2, 0, len(tokens), *([0] * 251))
    with open(path, "wb") as f:
        f.write(header + struct.pack(f"<{len(tokens)}H", *tokens))


def check_registration():
    spec = registered["llama3"]
    if spec.build_dataloader_fn is not avf_token_shards.build_avf_dataloader or spec.build_tokenizer_fn is not None:
        fail("the registered llama3 spec does not read the shards, or still builds a tokenizer")
    if (spec.parallelize_fn, spec.pipelining_fn, spec.build_loss_fn) != ("parallelize_llama", "pipeline_llm",
                                                                        "build_cross_entropy_loss"):
        fail("the registered llama3 spec changed more than the dataloader and tokenizer")
    print("ok: llama3 registered with the shard reader and no tokenizer; the rest is torchtitan's")


def expected(tokens, seq_len, global_batch, ranks, rank, item):
    """docs/data-format.md: item `item` of data rank `rank`, as (inputs, targets)."""
    per_rank = global_batch // ranks
    batches = ((len(tokens) - 1) // seq_len) // global_batch
    step, k = divmod(item, per_rank)
    j = (step % batches) * global_batch + rank * per_rank + k
    run = tokens[j * seq_len : j * seq_len + seq_len + 1]
    return run[:-1], run[1:]


def check_order(config, tables, tokens, steps):
    t, ranks = config.training, config.parallelism.data_parallel_shard_degree
    slices = tables["data"]["slices"]
    for rank in range(ranks):
        loader = avf_token_shards.build_avf_dataloader(ranks, rank, None, config)
        order = loader.dataset._order
        got = {"first_sequence": order.sequence(0, rank), "sequences_per_step": order.per_rank}
        want = {k: slices[rank][k] for k in got}
        if got != want:
            fail(f"rank {rank} reads {got}; avf-run's slice is {want}")
        batches = iter(loader)
        item = 0
        for _ in range(steps * t.global_batch_size // (t.local_batch_size * ranks)):
            for inputs, targets in next(batches):
                want = expected(tokens, t.seq_len, t.global_batch_size, ranks, rank, item)
                if (inputs["input"], targets) != want:
                    fail(f"rank {rank}, item {item}: not avf-run's sequence")
                item += 1
    epochs = steps / (((len(tokens) - 1) // t.seq_len) // t.global_batch_size)
    print(f"ok: {ranks} data ranks, {steps} steps ({epochs:.1f} epochs): every rank read avf-run's sequences, "
          "inputs and targets shifted by one")


def check_resume(config, data_dir):
    t, ranks = config.training, config.parallelism.data_parallel_shard_degree
    loader = avf_token_shards.build_avf_dataloader(ranks, 1, None, config)
    whole = iter(loader.dataset)
    straight = [next(whole) for _ in range(13)]
    state = loader.dataset.state_dict()
    again = avf_token_shards.build_avf_dataloader(ranks, 1, None, config).dataset
    again.load_state_dict(state)
    resumed = iter(again)
    if [next(resumed) for _ in range(5)] != [next(whole) for _ in range(5)]:
        fail("a resumed reader does not go on at the next sequence")
    other = dict(state, global_batch=t.global_batch_size * 2)
    try:
        again.load_state_dict(other)
        fail("a checkpoint of another global batch was taken")
    except avf_shards.ShardError as e:
        print(f"ok: resumed at the next sequence; another batch refused: {e}")


def check_vocabulary(config, data_dir):
    t, ranks = config.training, config.parallelism.data_parallel_shard_degree
    write_shard(os.path.join(data_dir, "shard_000000.bin"), [5] * 40 + [2048] + [5] * 60000)
    loader = avf_token_shards.build_avf_dataloader(ranks, 0, None, config)
    try:
        next(iter(loader.dataset))
        fail("a token beyond the vocabulary was read")
    except avf_shards.ShardError as e:
        print(f"ok: {e}")


def main(argv):
    trainers, keys_def, toml_path, tables_path, data_dir = argv[1:6]
    config = job_config(keys_def, toml_path)
    # Three shards of 20000 tokens: 7 global batches of 32 sequences of 256 tokens.
    tokens = [(i * 7919 + i // 2048) % 2048 for i in range(60000)]
    os.makedirs(data_dir, exist_ok=True)
    for s in range(3):
        write_shard(os.path.join(data_dir, avf_shards.shard_file_name(s)), tokens[s * 20000 : (s + 1) * 20000])
    config.training.dataset_path = data_dir
    check_registration()
    check_order(config, json.load(open(tables_path)), tokens, steps=16)
    check_resume(config, data_dir)
    check_vocabulary(config, data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
