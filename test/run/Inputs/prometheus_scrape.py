#!/usr/bin/env python3
"""A real Prometheus scrapes a local run's ranks, and the job's alert rules run on what it scraped.

  prometheus_scrape.py WORK RULES -- AVIFLOWC_RUN_COMMAND...

Starts Debian's `prometheus` on loopback (1 s scrapes and rule evaluations,
storage in WORK), with RULES (a Prometheus rule file) loaded; then the run
command with `--metrics-port P` appended (rank r serves on P + r). It reads
the series back through Prometheus's HTTP API: every rank's avf_step must
advance between two reads, each series carry the rank's labels; then every
rule of RULES must have been evaluated on the live series without an error.
The run is stopped (SIGTERM) once that is seen; Prometheus always. Prints
one line per check; exits 1 with the reason (and Prometheus's log) on a
failure, and never waits more than its deadlines.
"""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from free_ports import free_ports

DEADLINE_S = 120


def api(port, path, **params):
    url = f"http://127.0.0.1:{port}/api/v1/{path}?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as r:
        reply = json.load(r)
    if reply.get("status") != "success":
        raise RuntimeError(f"{path}: {reply}")
    return reply["data"]


def wait_for(what, check, deadline, interval=0.5):
    while time.time() < deadline:
        try:
            found = check()
            if found:
                return found
        except (OSError, RuntimeError, ValueError):
            pass
        time.sleep(interval)
    raise TimeoutError(what)


def steps_by_rank(port):
    return {s["metric"]["rank"]: float(s["value"][1]) for s in api(port, "query", query="avf_step")["result"]}


def check_series(port, ranks, deadline):
    first = wait_for("every rank's avf_step in Prometheus",
                     lambda: (lambda s: s if len(s) == ranks and min(s.values()) > 0 else None)(steps_by_rank(port)),
                     deadline)
    later = wait_for("every rank's avf_step advancing",
                     lambda: (lambda s: s if all(s[r] > first[r] for r in first) else None)(steps_by_rank(port)),
                     deadline)
    print(f"ok: {ranks} ranks scraped; avf_step went from {sorted(first.items())} to {sorted(later.items())}")
    parts = api(port, "query", query='avf_step_part_seconds{part="bubble"}')["result"]
    labels = sorted(set(parts[0]["metric"]) - {"__name__", "instance"})
    print(f"ok: avf_step_part_seconds by rank carries {labels}")
    predicted = api(port, "query", query="avf_step_seconds_predicted")["result"]
    print(f"ok: avf_step_seconds_predicted served by {len(predicted)} ranks")


def check_rules(port, deadline):
    def evaluated():
        groups = api(port, "rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        if not rules or any(r.get("lastEvaluation", "").startswith("0001") for r in rules):
            return None
        return rules

    rules = wait_for("the rules evaluated", evaluated, deadline)
    bad = [f"{r['name']}: {r.get('lastError')}" for r in rules if r.get("health") != "ok"]
    if bad:
        raise SystemExit("FAIL: rules with errors on the live series: " + "; ".join(bad))
    states = sorted(f"{r['name']}={r.get('state', 'recorded')}" for r in rules)
    print(f"ok: {len(rules)} rules evaluated on the live series without an error: {' '.join(states)}")


def start_prometheus(work, rules, metrics_port, ranks):
    port = free_ports(1)
    targets = ", ".join(f'"127.0.0.1:{metrics_port + r}"' for r in range(ranks))
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                f"rule_files: [{json.dumps(os.path.abspath(rules))}]\n"
                "scrape_configs:\n"
                f"  - {{job_name: avf, honor_labels: true, static_configs: [{{targets: [{targets}]}}]}}\n")
    log = open(os.path.join(work, "prometheus.log"), "w")
    process = subprocess.Popen(
        ["prometheus", f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/tsdb",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT)
    return process, port


def main(argv):
    work, rules, command = argv[1], argv[2], argv[4:]
    ranks = 2
    metrics_port = free_ports(ranks)
    deadline = time.time() + DEADLINE_S
    prometheus, port = start_prometheus(work, rules, metrics_port, ranks)
    run = None
    try:
        wait_for("Prometheus to be ready", lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{port}/-/ready", timeout=2).status == 200, time.time() + 60)
        run_log = open(os.path.join(work, "run.log"), "w")
        run = subprocess.Popen(command + ["--metrics-port", str(metrics_port)], stdout=run_log,
                               stderr=subprocess.STDOUT, start_new_session=True)
        check_series(port, ranks, deadline)
        check_rules(port, deadline)
    except TimeoutError as e:
        log = open(os.path.join(work, "prometheus.log")).read()[-3000:]
        run_log = open(os.path.join(work, "run.log")).read()[-2000:] if run else ""
        print(f"FAIL: timed out waiting for {e}\n--- prometheus.log\n{log}\n--- run.log\n{run_log}")
        return 1
    finally:
        if run and run.poll() is None:
            os.killpg(run.pid, signal.SIGTERM)
            try:
                run.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(run.pid, signal.SIGKILL)
        prometheus.terminate()
        try:
            prometheus.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prometheus.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
