"""Fault probes of `aviflowc run --local`: starts the run, and once training
is under way does one thing to it, then prints what came of it for FileCheck:
the run's exit status, whether it ended within 30 s of the fault, the
processes of the run left behind, and the run's output. Never waits more
than 90 s.

usage: probe_run.py ACTION RUN_DIR -- AVIFLOWC_COMMAND...
  term             SIGTERM to aviflowc
  kill-run         SIGKILL to aviflowc alone (its node launchers must stop)
  kill-rank N      SIGKILL to rank N
  stop-rank N      SIGSTOP to rank N
  term-rank N      SIGTERM to rank N
  env              prints the thread variables of every avf-run of the run
                   (launcher or rank), then SIGTERM to aviflowc
  lock N           a second run on the same folders while the first trains
                   (refused, the first's plan.json kept), then, once the
                   first has trained 6 steps, SIGKILL to every process of it,
                   then a third run with `--max-steps N` runs
RUN_DIR must be absolute: the run's processes are those whose arguments
hold it.
"""
import fcntl
import os
import signal
import subprocess
import sys
import time


def holds_file(pid, path):
    """Whether process pid has path open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                return True
        except OSError:
            continue
    return False


def run_processes(run_dir):
    """pid -> arguments of every process of the run: those whose arguments
    hold run_dir, and those still holding its lock. A process killed while
    it holds much memory has no arguments any more while the kernel frees
    it, but holds its files, and so the lock, until that is done."""
    lock = os.path.join(run_dir, ".avf-run.lock")
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = [a.decode() for a in f.read().split(b"\0") if a]
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (run_dir in args or holds_file(entry, lock)):
            found[int(entry)] = args
    return found


def lock_free(run_dir):
    """Whether the run's lock can be taken now. A killed process's threads
    may still hold its files after its main thread is a zombie, so no
    process list can say it: only trying the lock can."""
    try:
        fd = os.open(os.path.join(run_dir, ".avf-run.lock"), os.O_RDWR)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def ranks(run_dir, rank):
    return [p for p, args in run_processes(run_dir).items() if f"--local-rank={rank}" in args]


def blocks_stop_signals(pid):
    """Whether the main thread of pid blocks SIGTERM and SIGINT (a rank
    takes them on a thread that does not compute: run/stop_signals.h)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/status") as f:
            line = next(l for l in f if l.startswith("SigBlk:"))
    except (OSError, StopIteration):
        return None
    mask = int(line.split()[1], 16)
    return all(mask >> (sig - 1) & 1 for sig in (signal.SIGTERM, signal.SIGINT))


def describe_threads(run_dir):
    """One line per avf-run process: its role, its thread variables, and
    whether its thread count is its cores divided by its node's ranks; for a
    rank, whether its computing threads block the stop signals."""
    procs = {p: a for p, a in run_processes(run_dir).items() if a[0].endswith("avf-run")}
    lines = []
    for pid in procs:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.decode().split("=", 1) for v in f.read().split(b"\0") if b"=" in v)
            parents = {int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]) for p in procs}
        except OSError:
            continue
        role = "launcher" if pid in parents else "rank"
        values = " ".join(f"{n}={env.get(n, '-')}" for n in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY"))
        share = max(1, len(os.sched_getaffinity(pid)) // int(env.get("PET_NPROC_PER_NODE", "1")))
        line = f"{role}: {values} share={env.get('OMP_NUM_THREADS') == str(share)}"
        if role == "rank":
            line += f" compute_blocks_stop={blocks_stop_signals(pid)}"
        lines.append(line)
    return sorted(lines)


def wait_until(condition, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def start(command, log_name, run_dir):
    log = open(os.path.join(os.path.dirname(run_dir), log_name), "w+")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log


def training(run_dir):
    metrics = os.path.join(run_dir, "metrics.jsonl")
    return os.path.exists(metrics) and os.path.getsize(metrics) > 0


def steps_done(run_dir):
    """How many steps the run's metrics.jsonl records."""
    try:
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def finish(proc, log):
    try:
        status = proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        status = "hung"
    log.seek(0)
    return status, log.read()


def main():
    action = sys.argv[1]
    arg = sys.argv[2] if action.endswith("-rank") or action == "lock" else None
    run_dir = sys.argv[sys.argv.index("--") - 1]
    command = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    first, log = start(command, "first.log", run_dir)
    if not wait_until(lambda: training(run_dir), 60):
        print("training did not start")
    started = time.time()
    if action == "term":
        first.send_signal(signal.SIGTERM)
    elif action == "env":
        for line in describe_threads(run_dir):
            print(line)
        first.send_signal(signal.SIGTERM)
    elif action == "kill-run":
        first.kill()
    elif action == "lock":
        plan = os.path.join(run_dir, "plan.json")
        before = os.stat(plan).st_mtime_ns
        second, second_log = start(command, "second.log", run_dir)
        status, text = finish(second, second_log)
        print(f"second run exit: {status}")
        print(f"plan.json kept: {os.stat(plan).st_mtime_ns == before}")
        # A checkpoint (every 4 steps in the test's job) before the kill, so
        # that the third run has one to resume from, however fast the refusal.
        wait_until(lambda: steps_done(run_dir) >= 6, 60)
        sys.stdout.write(text)
        for pid in list(run_processes(run_dir)) + [first.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    else:
        victims = ranks(run_dir, arg)
        print(f"victims: {len(victims)}")
        sig = {"kill-rank": signal.SIGKILL, "stop-rank": signal.SIGSTOP, "term-rank": signal.SIGTERM}[action]
        for pid in victims:
            os.kill(pid, sig)
    status, _ = finish(first, log)
    print(f"run exit: {status}")
    print(f"ended within 30 s: {time.time() - started < 30}")
    # Processes a killed aviflowc leaves must stop on their own.
    wait_until(lambda: not run_processes(run_dir), 30 if action in ("kill-run", "lock") else 1)
    if action == "lock":
        wait_until(lambda: lock_free(run_dir), 30)
    print(f"processes left: {len(run_processes(run_dir))}")
    log.seek(0)
    sys.stdout.write(log.read())
    if action == "lock":
        third, third_log = start(command + ["--max-steps", arg], "third.log", run_dir)
        status, text = finish(third, third_log)
        print(f"third run exit: {status}")
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
