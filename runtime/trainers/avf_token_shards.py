"""torchtitan reads aviflowc's token shards in avf-run's order.

The TOML that `aviflowc emit trainer` writes imports this module first
(`experimental.custom_import = "avf_token_shards"`). Importing it registers
the train spec `llama3`, which torchtitan prefers to its built-in one: the
same model, parallelisms, optimizer and loss, with a dataloader that reads
the shards at `training.dataset_path` and no tokenizer (the shards are
tokens already).

Data rank d of D yields, for every step, the G/D sequences of the global
batch that avf-run's data rank d trains (avf_shards.Order), each as
({"input": tokens[:-1]}, tokens[1:]); torchtitan batches them
`training.local_batch_size` at a time. A checkpoint records how many
sequences a rank has yielded, with what it was reading; a resumed run goes
on at the next, and refuses another dataset or batch.
"""

import dataclasses

import torch
from torch.distributed.checkpoint.stateful import Stateful
from torch.utils.data import IterableDataset
from torchtitan.components.dataloader import ParallelAwareDataloader
from torchtitan.models import llama3
from torchtitan.protocols.train_spec import register_train_spec

import avf_shards


class TokenShardDataset(IterableDataset, Stateful):
    def __init__(self, folder, seq_len, global_batch, dp_rank, dp_world_size, vocab):
        self._data = avf_shards.Dataset(folder)
        self._order = avf_shards.Order(self._data.tokens, seq_len, global_batch, dp_world_size)
        self._rank = dp_rank
        self._vocab = vocab
        self._yielded = 0
        self._reading = {"tokens": self._data.tokens, "seq_len": seq_len, "global_batch": global_batch,
                         "data_ranks": dp_world_size}

    def __iter__(self):
        while True:
            first = self._order.first_token(self._order.sequence(self._yielded, self._rank))
            tokens = self._data.read(first, self._order.seq_len + 1)
            self._data.check_vocabulary(tokens, first, self._vocab)
            x = torch.tensor(tokens, dtype=torch.long)
            self._yielded += 1
            yield {"input": x[:-1]}, x[1:]

    def state_dict(self):
        return {"sequences_yielded": self._yielded, **self._reading}

    def load_state_dict(self, state_dict):
        saved = {k: state_dict.get(k) for k in self._reading}
        if saved != self._reading:
            raise avf_shards.ShardError(
                f"the checkpoint's data position is for {saved}, but this run reads {self._reading}: "
                "the order of training depends on the dataset's tokens, seq_len and the global batch")
        self._yielded = state_dict["sequences_yielded"]


def build_avf_dataloader(dp_world_size, dp_rank, tokenizer, job_config, infinite=True):
    """torchtitan's DataLoaderBuilder for the token shards (`tokenizer` is unused: None)."""
    training = job_config.training
    global_batch = training.global_batch_size
    if global_batch < 0:  # torchtitan's default: no gradient accumulation
        global_batch = training.local_batch_size * dp_world_size
    vocab = llama3.llama3_args[job_config.model.flavor].vocab_size
    dataset = TokenShardDataset(training.dataset_path, training.seq_len, global_batch, dp_rank, dp_world_size, vocab)
    kwargs = {**dataclasses.asdict(training.dataloader), "batch_size": training.local_batch_size}
    return ParallelAwareDataloader(dataset, dp_rank=dp_rank, dp_world_size=dp_world_size, **kwargs)


register_train_spec(
    "llama3",
    dataclasses.replace(llama3.get_train_spec(), build_dataloader_fn=build_avf_dataloader, build_tokenizer_fn=None),
)
