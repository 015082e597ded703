#!/usr/bin/env python3
"""Replays restarts of a PyTorchJob against the training operator's budget rule.

  operator_backoff.py JOB.yaml MAX_INCIDENTS

The rule, as the Kubeflow training operator v1.9 applies it to replicas with
restartPolicy OnFailure or Always (docs/deploy.md, "Restarts"): the restart
counts of every container and init container of the job's Running pods are
summed; with backoffLimit 0 the job fails at the first restart, otherwise
once the sum is >= backoffLimit. An incident (a rank fails) makes every rank
exit, so every pod's trainer restarts once, one pod after another. Prints how
many whole incidents the job survives and in which one it fails.
"""
import sys

import yaml


def past_backoff_limit(limit, restarts):
    total = sum(restarts)
    return total > 0 if limit == 0 else total >= limit


def main(argv):
    with open(argv[1]) as f:
        job = [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "PyTorchJob"][0]
    limit = job["spec"]["runPolicy"]["backoffLimit"]
    pods = sum(r["replicas"] for r in job["spec"]["pytorchReplicaSpecs"].values())
    restarts = [0] * pods
    for incident in range(1, int(argv[2]) + 1):
        for pod in range(pods):
            restarts[pod] += 1
            if past_backoff_limit(limit, restarts):
                print(f"{pods} pods, backoffLimit {limit}: survives {incident - 1} incidents, fails in incident {incident}")
                return 0
    print(f"{pods} pods, backoffLimit {limit}: survives {argv[2]} incidents")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
