#!/usr/bin/env python3
"""The alerts of monitoring.yaml, for promtool.

  alert_tests.py rules MONITORING.yaml
      the PrometheusRule's groups as a Prometheus rules file (`groups:`)
  alert_tests.py tests PLAN.json MONITORING.yaml RULES_FILE [--stall-factor F]
                 [--mfu-fraction F] [--mfu-for SECONDS] [--checkpoint-factor F]
      a `promtool test rules` file: synthetic series of two ranks in which
      each alert fires on the bad series and stays quiet on the good ones.

The thresholds are derived here from plan.json and the factors by the
formulas of docs/deploy.md (Monitoring), not read from the rules: the test
fails when the rules' numbers differ from them.
"""
import argparse
import json
import math
import sys

import yaml

MIN_STALL = 300  # seconds: no alert on time comes sooner
RESTART_WINDOW = 3600


def load_monitoring(path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    return {d["kind"]: d for d in docs}


def rules_command(args):
    rule = load_monitoring(args.monitoring)["PrometheusRule"]
    yaml.safe_dump({"groups": rule["spec"]["groups"]}, sys.stdout, sort_keys=False, width=1000)


class Job:
    """What the thresholds come from: plan.json and the job's factors."""

    def __init__(self, plan, args):
        pred = plan["predicted"]
        self.name = plan["job"]["name"]
        self.step = pred["step_time_s"]
        self.mfu = pred["mfu"]
        ck = plan["checkpoint"]
        self.interval = 0
        write = 0
        if ck and pred["checkpoint_s"] > 0:
            steps = plan["training"]["steps"]
            if ck["every_steps"]:
                count = math.ceil(steps / ck["every_steps"])
            elif ck["every_seconds"]:
                count = math.ceil(steps * self.step / ck["every_seconds"])
            else:
                count = 1
            write = pred["checkpoint_s"] / (1 if ck["async"] else max(count, 1))
        if ck:
            if ck["every_seconds"]:
                self.interval = ck["every_seconds"]
            elif ck["every_steps"]:
                self.interval = ck["every_steps"] * self.step
        self.stall = math.ceil(max(args.stall_factor * self.step, MIN_STALL) + write)
        self.mfu_below = args.mfu_fraction * self.mfu
        self.mfu_for = math.ceil(args.mfu_for)
        self.checkpoint = 0
        if self.interval:
            self.checkpoint = math.ceil(max(args.checkpoint_factor * self.interval, MIN_STALL) + write)


def duration(seconds):
    """As Prometheus writes it, in the largest whole unit."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds > 0 and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def check_thresholds(job, rules):
    """Each alert's expression holds the threshold computed here."""
    wanted = {
        "AvfTrainingStalled": f"> {job.stall}",
        "AvfDataNotAdvancing": f"[{duration(job.stall)}:",
        "AvfMfuBelowPrediction": "< {:.4g}".format(job.mfu_below),
    }
    if job.checkpoint:
        wanted["AvfCheckpointOverdue"] = f"> {job.checkpoint}"
    for name, text in wanted.items():
        expr = rules[name]["expr"]
        if text not in expr:
            sys.exit(f"error: {name}: expected `{text}` in its expression: {expr}")
    if bool(job.checkpoint) != ("AvfCheckpointOverdue" in rules):
        sys.exit("error: AvfCheckpointOverdue must be there exactly when the job checkpoints on the way")


class Timeline:
    """Samples every `step` seconds from 0 to `end`; values as promtool reads them."""

    def __init__(self, step, end):
        self.step = step
        self.times = list(range(0, end + step, step))

    def values(self, f):
        out = []
        for t in self.times:
            v = f(t)
            out.append("_" if v is None else (v if isinstance(v, str) else "{:g}".format(v)))
        return " ".join(out)


def series(name, job, namespace, rank, pod_suffix="", **extra):
    labels = {"job": job.name, "namespace": namespace, "pod": f"trainer-{rank}{pod_suffix}", "rank": str(rank)}
    labels.update(extra)
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{name}{{{inner}}}"


class Scenario:
    def __init__(self, job, namespace, rules, timeline, title):
        self.job, self.namespace, self.rules, self.tl = job, namespace, rules, timeline
        self.title = title
        self.input = []
        self.checks = []

    def add(self, name, rank, f, pod_suffix=""):
        self.input.append({"series": series(name, self.job, self.namespace, rank, pod_suffix),
                           "values": self.tl.values(f)})

    def expect(self, alert, at, firing):
        if alert not in self.rules:
            return
        rule = self.rules[alert]
        exp = []
        if firing:
            exp = [{"exp_labels": {"severity": rule["labels"]["severity"], "namespace": self.namespace,
                                   "job": self.job.name},
                    "exp_annotations": dict(rule["annotations"])}]
        self.checks.append({"eval_time": f"{int(at)}s", "alertname": alert, "exp_alerts": exp})

    def test(self):
        return {"name": self.title, "interval": f"{self.tl.step}s", "input_series": self.input,
                "alert_rule_test": self.checks}


def healthy(s, job, mfu=None, stop_steps=None, stop_data=None, stop_commits=None, loss=None):
    """Two ranks that step, read data and (rank 0) commit, until the stop times."""
    for rank in (0, 1):
        s.add("avf_start_timestamp_seconds", rank, lambda t: 0)
        s.add("avf_step_end_timestamp_seconds", rank, lambda t: min(t, stop_steps) if stop_steps else t)
        s.add("avf_loss", rank, (lambda t: loss(rank, t)) if loss else (lambda t: 2.5))
        s.add("avf_mfu_ratio", rank, lambda t: job.mfu if mfu is None else mfu)
        s.add("avf_restarts_total", rank, lambda t: 0)
        s.add("avf_data_epoch", rank, lambda t: 0)
        s.add("avf_data_sequence", rank, lambda t: 8 * (min(t, stop_data) if stop_data is not None else t))
    if job.checkpoint:
        last = stop_commits if stop_commits is not None else 10**12
        s.add("avf_checkpoint_commit_timestamp_seconds", 0,
              lambda t: math.floor(min(t, last) / job.interval) * job.interval)


ALERTS = ["AvfTrainingStalled", "AvfLossNotFinite", "AvfMfuBelowPrediction", "AvfCheckpointOverdue",
          "AvfRestarted", "AvfDataNotAdvancing"]


def tests_command(args):
    plan = json.load(open(args.plan))
    monitoring = load_monitoring(args.monitoring)
    rule = monitoring["PrometheusRule"]
    namespace = rule["metadata"]["namespace"]
    rules = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    job = Job(plan, args)
    check_thresholds(job, rules)
    span = max(job.stall, job.mfu_for, job.checkpoint, RESTART_WINDOW) * 2 + 600
    step = max(15, span // 1500 // 15 * 15)
    margin = 3 * step + 90  # the evaluation, the subqueries' step and the `for` of 1m
    tl = Timeline(step, span)
    tests = []

    good = Scenario(job, namespace, rules, tl, "a healthy run: no alert")
    healthy(good, job)
    for at in (job.stall + margin, span // 2, span):
        for alert in ALERTS:
            good.expect(alert, at, False)
    tests.append(good)

    t0 = span // 4
    stalled = Scenario(job, namespace, rules, tl, "no step after t0: stalled, the data stuck")
    healthy(stalled, job, stop_steps=t0, stop_data=t0)
    stalled.expect("AvfTrainingStalled", t0 + job.stall - margin, False)
    stalled.expect("AvfTrainingStalled", t0 + job.stall + margin, True)
    stalled.expect("AvfDataNotAdvancing", t0 + job.stall - margin, False)
    stalled.expect("AvfDataNotAdvancing", t0 + job.stall + margin, True)
    tests.append(stalled)

    data = Scenario(job, namespace, rules, tl, "steps without data: the data stuck, not stalled")
    healthy(data, job, stop_data=t0)
    data.expect("AvfDataNotAdvancing", t0 + job.stall + margin, True)
    data.expect("AvfTrainingStalled", t0 + job.stall + margin, False)
    tests.append(data)

    nan = Scenario(job, namespace, rules, tl, "a NaN, then an infinite loss")
    healthy(nan, job, loss=lambda rank, t: "NaN" if rank == 1 and t0 <= t < 2 * t0 else (
        "+Inf" if rank == 0 and t >= 3 * t0 else 2.5))
    nan.expect("AvfLossNotFinite", t0 - margin, False)
    nan.expect("AvfLossNotFinite", t0 + margin, True)
    nan.expect("AvfLossNotFinite", 2 * t0 + margin, False)
    nan.expect("AvfLossNotFinite", 3 * t0 + margin, True)
    tests.append(nan)

    for factor, fires in ((0.98, True), (1.02, False)):
        low = Scenario(job, namespace, rules, tl, f"MFU at {factor} x the threshold")
        healthy(low, job, mfu=factor * job.mfu_below)
        low.expect("AvfMfuBelowPrediction", job.mfu_for - margin, False)
        low.expect("AvfMfuBelowPrediction", job.mfu_for + margin, fires)
        tests.append(low)

    if job.checkpoint:
        t2 = span // 4 // job.interval * job.interval
        late = Scenario(job, namespace, rules, tl, "no commit after t2")
        healthy(late, job, stop_commits=t2)
        late.expect("AvfCheckpointOverdue", t2 + job.checkpoint - margin, False)
        late.expect("AvfCheckpointOverdue", t2 + job.checkpoint + margin, True)
        tests.append(late)
        never = Scenario(job, namespace, rules, tl, "no commit at all: the age counts from the start")
        healthy(never, job, stop_commits=0)
        never.expect("AvfCheckpointOverdue", job.checkpoint - margin, False)
        never.expect("AvfCheckpointOverdue", job.checkpoint + margin, True)
        tests.append(never)

    t3 = span // 4
    restart = Scenario(job, namespace, rules, tl, "rank 0's pod is replaced at t3")
    healthy(restart, job)
    restart.input = [i for i in restart.input if not i["series"].startswith("avf_restarts_total")]
    restart.add("avf_restarts_total", 0, lambda t: 0 if t < t3 else None)
    restart.add("avf_restarts_total", 0, lambda t: 1 if t >= t3 else None, pod_suffix="b")
    restart.add("avf_restarts_total", 1, lambda t: 0)
    restart.expect("AvfRestarted", t3 - margin, False)
    restart.expect("AvfRestarted", t3 + margin, True)
    restart.expect("AvfRestarted", t3 + RESTART_WINDOW + margin, False)
    tests.append(restart)

    out = {"rule_files": [args.rules_file], "evaluation_interval": f"{step}s",
           "tests": [t.test() for t in tests]}
    yaml.safe_dump(out, sys.stdout, sort_keys=False, width=1000)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rules")
    r.add_argument("monitoring")
    t = sub.add_parser("tests")
    t.add_argument("plan")
    t.add_argument("monitoring")
    t.add_argument("rules_file")
    t.add_argument("--stall-factor", type=float, default=10)
    t.add_argument("--mfu-fraction", type=float, default=0.5)
    t.add_argument("--mfu-for", type=float, default=1800)
    t.add_argument("--checkpoint-factor", type=float, default=3)
    args = parser.parse_args()
    rules_command(args) if args.command == "rules" else tests_command(args)


if __name__ == "__main__":
    main()
