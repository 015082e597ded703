#!/usr/bin/env python3
"""Writes the toy corpus of examples/gpt2_tiny_local.avf: deterministic
English-like text (the same bytes on every machine and Python 3 version),
so the local example needs no download. tools/setup.sh tokenizes it with
`avf-run tokenize` into examples/data/toy-corpus.

Usage: tools/toy_corpus.py [LINES] > corpus.txt
"""
import random
import sys

SUBJECTS = ["the model", "a small network", "the optimizer", "each rank", "the planner", "the compiler",
            "a pipeline stage", "the data loader", "every layer", "the scheduler", "a tensor shard", "the cluster"]
VERBS = ["reads", "writes", "checks", "predicts", "splits", "gathers", "reduces", "updates", "stages", "plans",
         "measures", "schedules", "restores", "computes", "places"]
OBJECTS = ["the next token", "a batch of sequences", "its gradients", "the shard files", "a checkpoint",
           "the learning rate", "every parameter", "the loss", "the fat tree", "a data slice", "the plan",
           "its activations", "the optimizer state", "a leaf switch", "the hot tier"]
ENDINGS = ["", " before the next step", " after the warm-up", " on every node", " in a fixed order",
           " while the loss falls", " without a download", " across the spine", " inside one node"]


def sentence(rng: random.Random) -> str:
    words = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(ENDINGS)}"
    return words[0].upper() + words[1:] + rng.choice([".", ".", ".", "!", "?"])


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 37000
    rng = random.Random(20261201)
    out = []
    for _ in range(lines):
        out.append(" ".join(sentence(rng) for _ in range(rng.randint(1, 4))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
