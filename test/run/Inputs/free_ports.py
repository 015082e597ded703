#!/usr/bin/env python3
"""Free ports of loopback for a test's servers.

  free_ports.py [COUNT]   prints P such that P .. P + COUNT - 1 are free (default 1)

P is taken from 20000..32000, below Linux's ephemeral ports (32768 and up),
which programs that ask the kernel for any free port are given: the Slurm
daemons of one test and the rendezvous stores of another cannot take P + 1
between this check and its use. prometheus_scrape.py imports free_ports().
"""
import random
import socket
import sys

LOW, HIGH = 20000, 32000


def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count=1):
    for base in random.sample(range(LOW, HIGH - count), 500):
        if all(free(p) for p in range(base, base + count)):
            return base
    raise SystemExit(f"FAIL: no {count} consecutive free ports in {LOW}..{HIGH} on 127.0.0.1")


if __name__ == "__main__":
    print(free_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
