# A deterministic English-like corpus for the runtime tests (no download).
import random
import sys

random.seed(7)
words = ("the model reads tokens from shards and learns to predict the next one while the loss "
         "falls step by step as the optimizer updates every parameter of every layer").split()
lines = [" ".join(random.choice(words) for _ in range(random.randint(6, 14))) + "." for _ in range(int(sys.argv[1]))]
sys.stdout.write("\n".join(lines) + "\n")
