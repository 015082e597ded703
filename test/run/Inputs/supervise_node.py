"""Runs one per-node avf-run (PET_NPROC_PER_NODE ranks) and, once training is
under way, either kills one local rank (`kill-rank N`) or sends SIGTERM to the
launcher (`term`). Prints the launcher's exit status, how long it took to
exit, and its output, for FileCheck. Never waits more than 60 s.

usage: supervise_node.py kill-rank N|term AVF_RUN PLAN DATA_DIR RUN_DIR
"""
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children_of(pid):
    """The pids whose parent is `pid`, with their command lines."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except OSError:
            continue
        if ppid == pid:
            found[int(entry)] = [a.decode() for a in cmdline if a]
    return found


def main():
    action, arg = sys.argv[1], sys.argv[2] if sys.argv[1] == "kill-rank" else None
    avf_run, plan, data, run_dir = sys.argv[-4:]
    env = dict(os.environ, PET_NODE_RANK="0", PET_NPROC_PER_NODE="2", PET_NNODES="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               AVF_JOB_TOKEN="supervise-node-test-token-0123456789")
    log = open(os.path.join(run_dir, "launcher.log"), "w+")
    launcher = subprocess.Popen([avf_run, "--plan", plan, "--data-dir", data, "--checkpoint-dir",
                                 os.path.join(run_dir, "ckpt"), "--run-dir", run_dir, "--max-steps", "100000"],
                                stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
        time.sleep(0.05)
    time.sleep(0.3)
    started = time.time()
    if action == "term":
        launcher.send_signal(signal.SIGTERM)
    else:
        victims = [p for p, cmd in children_of(launcher.pid).items() if f"--local-rank={arg}" in cmd]
        print(f"children found: {len(children_of(launcher.pid))}, victims: {len(victims)}")
        for p in victims:
            os.kill(p, signal.SIGKILL)
    try:
        status = launcher.wait(timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        launcher.kill()
        status = "hung"
    print(f"launcher exit: {status}")
    print(f"exited within 30 s: {time.time() - started < 30}")
    print(f"orphans left: {len(children_of(launcher.pid))}")
    log.seek(0)
    sys.stdout.write(log.read())


main()
