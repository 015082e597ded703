#!/usr/bin/env python3
"""Runs the script steps of an emitted Argo workflow on this machine, for tests.

  workflow_steps.py syntax WORKFLOW.yaml         `sh -n` every script template
  workflow_steps.py run WORKFLOW.yaml TEMPLATE [NAME=VALUE ...]
      runs one script template with `sh`, after its init containers (each
      `command` + `args`, with its own literal env), as the kubelet would:
      its literal env, plus NAME=VALUE for its input parameters (`first=0`
      sets ARG_first); an upper-case NAME (`AVF_EXPORT_LIST=/tmp/x`) sets
      that variable instead, in the init containers too, in place of the
      template's value (a path in a volume of the pod, say). Exit status and
      output are those of the first container that fails, else the script's.
      The test stands in for Argo: a variable whose
      value is an Argo expression (`{{workflow.uid}}`) keeps the value it has
      in this environment, if any, and `{{workflow.name}}` and
      `{{workflow.uid}}` in the script are $WF_NAME and $WF_UID, if set.
  workflow_steps.py init JOB.yaml REPLICA
      runs the init container of a PyTorchJob's REPLICA (Master, Worker)
      in job.yaml with `sh`, as the kubelet would.
"""
import os
import subprocess
import sys

import yaml


def templates(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return {t["name"]: t for t in doc["spec"]["templates"]}


def literal_env(script):
    env = {}
    for e in script.get("env", []):
        if "value" in e and not ("{{" in e["value"] and e["name"] in os.environ):
            env[e["name"]] = e["value"]
    return env


def main(argv):
    if len(argv) >= 3 and argv[1] == "syntax":
        bad = 0
        for name, t in sorted(templates(argv[2]).items()):
            if "script" not in t:
                continue
            r = subprocess.run(["sh", "-n"], input=t["script"]["source"], text=True)
            print(f"{name}: {'ok' if r.returncode == 0 else 'SYNTAX ERROR'}")
            bad += r.returncode != 0
        return 1 if bad else 0
    if len(argv) >= 4 and argv[1] == "run":
        t = templates(argv[2])[argv[3]]
        overrides = {}
        for arg in argv[4:]:
            name, value = arg.split("=", 1)
            overrides[name if name.isupper() else "ARG_" + name] = value
        for init in t.get("initContainers", []):
            env = dict(os.environ)
            env.update(literal_env(init))
            env.update(overrides)
            r = subprocess.run(init["command"] + init.get("args", []), env=env)
            if r.returncode != 0:
                return r.returncode
        env = dict(os.environ)
        env.update(literal_env(t["script"]))
        env.update(overrides)
        source = t["script"]["source"]
        for var, name in (("{{workflow.name}}", "WF_NAME"), ("{{workflow.uid}}", "WF_UID")):
            if name in os.environ:
                source = source.replace(var, os.environ[name])
        r = subprocess.run(["sh", "-c", source], env=env)
        return r.returncode
    if len(argv) == 4 and argv[1] == "init":
        with open(argv[2]) as f:
            job = [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "PyTorchJob"][0]
        pod = job["spec"]["pytorchReplicaSpecs"][argv[3]]["template"]["spec"]
        init = pod["initContainers"][0]
        return subprocess.run(init["command"] + init["args"]).returncode
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
