#!/usr/bin/env python3
"""What the PodMonitor of monitoring.yaml scrapes.

  selects.py MONITORING.yaml JOB.yaml WORKFLOW.yaml

Checks that its selector matches every pod template of the training object
(job.yaml) and not the workflow's step pods (workflow.yaml's podMetadata),
and that each of its endpoints names a TCP port of the training container,
metrics-i at the first port + i. Prints what it found; exits 1 on a problem.
"""
import sys

import yaml


def docs(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


def pod_templates(node):
    """Every `template:` that holds a pod spec with containers, anywhere in `node`."""
    if isinstance(node, dict):
        t = node.get("template")
        if isinstance(t, dict) and "containers" in t.get("spec", {}):
            yield t
        for v in node.values():
            yield from pod_templates(v)
    elif isinstance(node, list):
        for v in node:
            yield from pod_templates(v)


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def main():
    monitor = next(d for d in docs(sys.argv[1]) if d["kind"] == "PodMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    endpoints = [e["port"] for e in monitor["spec"]["podMetricsEndpoints"]]
    problems = []
    templates = [t for d in docs(sys.argv[2]) for t in pod_templates(d)]
    for t in templates:
        if not selects(selector, t["metadata"]["labels"]):
            problems.append(f"a training pod template is not selected: {t['metadata']['labels']}")
        ports = {p["name"]: p for c in t["spec"]["containers"] for p in c.get("ports", [])}
        first = ports.get("metrics-0", {}).get("containerPort")
        for i, name in enumerate(endpoints):
            p = ports.get(name)
            if name != f"metrics-{i}" or not p or p["containerPort"] != first + i or p["protocol"] != "TCP":
                problems.append(f"endpoint {name} is not the container's port metrics-{i} at {first} + {i}")
        extra = [n for n in ports if n.startswith("metrics-") and n not in endpoints]
        if extra:
            problems.append(f"ports not scraped: {extra}")
    steps = [d["spec"]["podMetadata"]["labels"] for d in docs(sys.argv[3])]
    for labels in steps:
        if selects(selector, labels):
            problems.append(f"the workflow's step pods are selected: {labels}")
    for p in problems:
        print("error:", p)
    print(f"{len(templates)} training pod template(s) selected, {len(endpoints)} port(s) each; "
          f"{len(steps)} workflow's step pods not selected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
