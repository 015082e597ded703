#!/usr/bin/env python3
"""The Grafana dashboard of monitoring.yaml.

  dashboard.py MONITORING.yaml METRICS.def [--rules FILE]

Checks the ConfigMap (the label Grafana's sidecar loads, one JSON key), the
dashboard's JSON (a uid of at most 40 characters, the panels the docs
promise, each query on the job's series) and that every series a query
names is defined in runtime/plan_format/metrics.def, `_predicted` only where
the definition serves a prediction. --rules writes the queries as recording
rules, for `promtool check rules`. Prints the panels; exits 1 on a problem.
"""
import argparse
import json
import re
import sys

import yaml

PANELS = ["Loss", "Tokens per second", "MFU", "Step time by part", "Memory per GPU by category",
          "Age of the newest checkpoint", "Restarts", "Data position"]


def definitions(path):
    text = open(path).read()
    rows = re.findall(r'AVF_METRIC\((\w+), "(\w+)", (\w+), "(\w*)", (true|false),', text)
    return {name: predicted == "true" for _, name, _, _, predicted in rows}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("monitoring")
    parser.add_argument("metrics_def")
    parser.add_argument("--rules")
    args = parser.parse_args()
    defined = definitions(args.metrics_def)
    docs = [d for d in yaml.safe_load_all(open(args.monitoring)) if d]
    maps = [d for d in docs if d["kind"] == "ConfigMap"]
    problems = []
    if len(maps) != 1 or maps[0]["metadata"]["labels"].get("grafana_dashboard") != "1":
        sys.exit("error: expected one ConfigMap labelled grafana_dashboard: \"1\"")
    (key, text), = maps[0]["data"].items()
    board = json.loads(text)
    if len(board["uid"]) > 40:
        problems.append(f"uid longer than 40 characters: {board['uid']}")
    job = None
    exprs = []
    for i, title in enumerate(PANELS):
        panel = board["panels"][i] if i < len(board["panels"]) else {"title": ""}
        if not panel["title"].startswith(title):
            problems.append(f"panel {i + 1} is `{panel['title']}`, expected `{title}`")
            continue
        print(f"{panel['title']}: {len(panel['targets'])} quer{'y' if len(panel['targets']) == 1 else 'ies'}")
        exprs += [t["expr"] for t in panel["targets"]]
    for expr in exprs:
        for name, job_name in re.findall(r'(avf_\w+)\{job="([^"]*)"', expr):
            job = job or job_name
            base = name[:-len("_predicted")] if name.endswith("_predicted") else name
            if base not in defined or (name != base and not defined[base]):
                problems.append(f"{name} is not a series metrics.def defines")
            if job_name != job:
                problems.append(f"{expr} is not on job {job}")
    if args.rules:
        rules = [{"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(exprs)]
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, open(args.rules, "w"), width=1000)
    for p in problems:
        print("error:", p)
    print(f"{key}: {len(board['panels'])} panels, {len(exprs)} queries on job {job}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
