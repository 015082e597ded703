"""aviflowc's token shards read by another trainer (docs/data-format.md).

A dataset is the files shard_000000.bin, shard_000001.bin, ... of one
folder: each a 1024-byte header of little-endian uint32 words, then its
tokens, 2 or 4 bytes each. Only the standard library is used, so the module
runs in any trainer's image.

`Dataset` opens and checks the shards; `Order` is avf-run's order of
training: sequence j is tokens j*T .. j*T + T (T + 1 tokens: the inputs and,
shifted by one, the targets), global batch b of an epoch holds sequences
b*G .. b*G + G - 1, step s trains batch s mod K, and data rank d of D trains
the G/D sequences from b*G + d*G/D on.
"""

import array
import os
import re
import sys
from dataclasses import dataclass

HEADER_BYTES = 1024
AVIFLOW_MAGIC = 0x54465641  # the bytes "AVFT"
AVIFLOW_VERSION = 1
# llm.c's shards: magic -> (version, bytes per token); the count is word 2.
LLMC_FORMATS = {20240520: (1, 2), 20240801: (7, 4)}
SHARD_NAME = re.compile(r"shard_(\d{6,})\.bin")


class ShardError(Exception):
    """A dataset that is not whole token shards; the message names the file."""


@dataclass(frozen=True)
class Shard:
    path: str
    index: int
    tokens: int
    width: int  # bytes per token: 2 or 4
    first_token: int  # the dataset's index of its first token


def shard_file_name(index):
    return "shard_%06d.bin" % index


def _words(header):
    return [int.from_bytes(header[4 * i : 4 * i + 4], "little") for i in range(6)]


def read_header(path):
    """(tokens, width) of the shard at `path`, checked against its size."""
    # Checked before opening: opening a FIFO would wait for a writer.
    if os.path.exists(path) and not os.path.isfile(path):
        raise ShardError(f"{path}: not a regular file")
    try:
        with open(path, "rb") as f:
            header = f.read(HEADER_BYTES)
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise ShardError(f"{path}: {e.strerror}") from None
    if len(header) < HEADER_BYTES:
        raise ShardError(f"{path}: {size} bytes, shorter than the {HEADER_BYTES}-byte header")
    magic, version, w2, _, lo, hi = _words(header)
    if magic == AVIFLOW_MAGIC:
        if version != AVIFLOW_VERSION:
            raise ShardError(f"{path}: aviflow shard of version {version}; expected version {AVIFLOW_VERSION}")
        tokens, width = (hi << 32) | lo, w2
        if width not in (2, 4):
            raise ShardError(f"{path}: {width} bytes per token; a shard holds 2 or 4")
    elif magic in LLMC_FORMATS:
        want_version, width = LLMC_FORMATS[magic]
        if version != want_version:
            raise ShardError(f"{path}: llm.c shard (magic {magic}) of version {version}; expected {want_version}")
        tokens = w2
    else:
        raise ShardError(f'{path}: not a token shard (magic 0x{magic:08x}; aviflow shards start with "AVFT")')
    want = HEADER_BYTES + tokens * width
    if size != want:
        raise ShardError(f"{path}: {size} bytes, but its header says {tokens} tokens: {want} bytes "
                         "(truncated or not a shard)")
    return tokens, width


def list_shards(folder):
    """The shards of `folder`, numbered from 0 without a gap, all of one width."""
    try:
        names = os.listdir(folder)
    except OSError as e:
        raise ShardError(f"{folder}: {e.strerror}") from None
    numbers = sorted(int(m.group(1)) for m in map(SHARD_NAME.fullmatch, names) if m)
    if not numbers:
        raise ShardError(f"{folder}: no token shards (shard_000000.bin, ...)")
    missing = [i for i in range(numbers[-1] + 1) if i not in set(numbers)]
    if missing:
        raise ShardError(f"{folder}: {shard_file_name(missing[0])} is missing, "
                         f"but the shards run to {shard_file_name(numbers[-1])}")
    shards, first = [], 0
    for i in numbers:
        path = os.path.join(folder, shard_file_name(i))
        tokens, width = read_header(path)
        if shards and width != shards[0].width:
            raise ShardError(f"{path}: {width}-byte tokens, but {shards[0].path} holds {shards[0].width}-byte tokens")
        shards.append(Shard(path, i, tokens, width, first))
        first += tokens
    return shards


class Dataset:
    """The tokens of a folder of shards, read by their index in the dataset."""

    def __init__(self, folder):
        self.folder = folder
        self.shards = list_shards(folder)
        self.width = self.shards[0].width
        self.tokens = sum(s.tokens for s in self.shards)

    def read(self, first, count):
        """Tokens first .. first + count - 1 as an array of ints."""
        if first < 0 or first + count > self.tokens:
            raise ShardError(f"{self.folder}: tokens {first}..{first + count - 1} are past its {self.tokens} tokens")
        out = array.array("H" if self.width == 2 else "I")
        for shard in self.shards:
            begin = max(first, shard.first_token)
            end = min(first + count, shard.first_token + shard.tokens)
            if begin < end:
                out.extend(self._read_shard(shard, begin - shard.first_token, end - begin))
        return out

    def _read_shard(self, shard, first, count):
        with open(shard.path, "rb") as f:
            f.seek(HEADER_BYTES + first * self.width)
            data = f.read(count * self.width)
        if len(data) != count * self.width:
            raise ShardError(f"{shard.path}: ends at byte {HEADER_BYTES + first * self.width + len(data)}; "
                             "the shard changed while training")
        tokens = array.array("H" if self.width == 2 else "I", data)
        if sys.byteorder == "big":
            tokens.byteswap()
        return tokens

    def check_vocabulary(self, tokens, first, vocab):
        """Stops at a token id the model has no embedding row for."""
        for k, token in enumerate(tokens):
            if token >= vocab:
                index = first + k
                shard = next(s for s in self.shards if index < s.first_token + s.tokens)
                local = index - shard.first_token
                raise ShardError(f"{shard.path}: token {local} of shard {shard.index} (byte offset "
                                 f"{HEADER_BYTES + local * self.width}) is {token}, not below the model's "
                                 f"vocabulary of {vocab}; the data was tokenized for another vocabulary")


class Order:
    """avf-run's order of training over `tokens` tokens (docs/data-format.md)."""

    def __init__(self, tokens, seq_len, global_batch, data_ranks):
        if global_batch % data_ranks != 0:
            raise ShardError(f"a global batch of {global_batch} sequences does not split over {data_ranks} data ranks")
        self.seq_len = seq_len
        self.global_batch = global_batch
        self.per_rank = global_batch // data_ranks
        self.sequences_per_epoch = (tokens - 1) // seq_len if tokens > 0 else 0
        self.batches_per_epoch = self.sequences_per_epoch // global_batch
        if self.batches_per_epoch == 0:
            raise ShardError(f"the dataset's {tokens} tokens hold {self.sequences_per_epoch} sequences of "
                             f"{seq_len} tokens, fewer than one global batch of {global_batch}")

    def sequence(self, item, data_rank):
        """The dataset's sequence that data rank `data_rank` trains as its `item`-th (from 0)."""
        step, k = divmod(item, self.per_rank)
        batch = step % self.batches_per_epoch
        return batch * self.global_batch + data_rank * self.per_rank + k

    def first_token(self, sequence):
        return sequence * self.seq_len
