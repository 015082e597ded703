"""Node losses of an elastic `aviflowc run --local`: starts the run, and once
it has trained some steps takes nodes away (a node's launcher and its ranks
killed at once, as when a machine dies), then prints what came of it for
FileCheck: the run's exit status, the time it took to train again, the
processes left, and the run's output. Never waits more than about 5 minutes.

usage: elastic_probe.py ACTION SLOTS STEPS RUN_DIR -- AVIFLOWC_COMMAND...
  lose             after STEPS steps, the nodes of SLOTS (1 or 1,2,...) die
  lose-launcher    after STEPS steps, the launcher of node SLOTS is killed
                   (SIGKILL) and its ranks stop as their supervisor died
  lose-and-return  after STEPS steps, node SLOTS dies; once the job trains on
                   fewer nodes, its launcher starts again (as a replaced
                   machine would), the ranks held (SIGSTOP) until the host
                   has seen it: a loaded machine may take seconds to start
                   it, and the short job could end before
RUN_DIR must be absolute: the run's processes are those whose arguments hold it.
"""
import os
import signal
import subprocess
import sys
import time

from probe_run import finish, run_processes, start, steps_done, wait_until


def environment(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(v.decode().split("=", 1) for v in f.read().split(b"\0") if b"=" in v)
    except OSError:
        return {}


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


def is_rank(args):
    return any(a.startswith("--local-rank") for a in args)


def node(run_dir, slot):
    """(pid, arguments, environment) of node `slot`'s launcher, and the pids
    of its ranks."""
    procs = run_processes(run_dir)
    for pid, args in procs.items():
        env = environment(pid)
        if env.get("AVF_NODE_SLOT") == str(slot) and not is_rank(args):
            return (pid, args, env), [p for p in procs if parent(p) == pid]
    return None, []


def rank0_starts(run_dir):
    """Rank 0's starts so far: (unix time, step) per line of starts/rank_00000."""
    try:
        with open(os.path.join(run_dir, "starts", "rank_00000")) as f:
            return [(float(t), int(s)) for t, s in (line.split() for line in f if line.strip())]
    except OSError:
        return []


def lose(run_dir, slots, launcher_only=False):
    """Kills the launchers of `slots` and their ranks at once (or the
    launchers alone); the launcher of the first, as it was, and the time of
    the kill."""
    lost, pids = [], []
    for slot in slots:
        launcher, ranks = node(run_dir, slot)
        if launcher:
            lost.append(launcher)
            pids += [launcher[0]] + ([] if launcher_only else ranks)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    print(f"killed: {len(lost)} launchers, {len(pids) - len(lost)} ranks")
    return (lost[0] if lost else None), time.time()


def recovery(run_dir, killed_at, starts_before):
    """Seconds from the kill to rank 0's next start, and to its first step."""
    if not wait_until(lambda: len(rank0_starts(run_dir)) > starts_before, 120):
        return None, None
    started, step = rank0_starts(run_dir)[starts_before]
    if not wait_until(lambda: steps_done(run_dir) > step, 120):
        return started - killed_at, None
    return started - killed_at, time.time() - killed_at


def restart(launcher, run_dir):
    """Starts a lost launcher again with its arguments and environment, less
    its supervisor (aviflowc, which does not know it any more)."""
    pid, args, env = launcher
    env.pop("AVF_SUPERVISOR_PID", None)
    log = open(os.path.join(os.path.dirname(run_dir), "returned.log"), "w+")
    return subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT), log


def hold_ranks(run_dir):
    """SIGSTOPs every rank of the run; their pids."""
    held = [p for p, args in run_processes(run_dir).items() if is_rank(args)]
    for pid in held:
        os.kill(pid, signal.SIGSTOP)
    return held


def release_ranks(held):
    for pid in held:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def run_log_has(run_dir, text):
    with open(os.path.join(os.path.dirname(run_dir), "run.log")) as f:
        return text in f.read()


def main():
    action, arg, steps, run_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    command = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    run, log = start(command, "run.log", run_dir)
    if not wait_until(lambda: steps_done(run_dir) >= steps, 120):
        print("training did not reach the step")
    starts_before = len(rank0_starts(run_dir))
    launcher, killed_at = lose(run_dir, [int(s) for s in arg.split(",")], action == "lose-launcher")
    if action == "lose-and-return":
        restarted, seconds = recovery(run_dir, killed_at, starts_before)
        print(f"trains again on fewer nodes within 60 s: {seconds is not None and seconds < 60}")
        wait_until(lambda: steps_done(run_dir) >= steps + 5, 60)
        held = hold_ranks(run_dir)
        returned, returned_log = restart(launcher, run_dir)
        # Well within --peer-timeout: the ranks all stopped at once see no
        # silent peer when they go on.
        seen = wait_until(lambda: run_log_has(run_dir, "launchers wait; stopping the ranks"), 8)
        release_ranks(held)
        print(f"the host saw the returned launcher while the ranks were held: {seen}")
        status, text = finish(returned, returned_log)
        print(f"returned launcher exit: {status}")
        sys.stdout.write(text)
    elif action in ("lose", "lose-launcher") and arg.isdigit() and arg != "0":
        restarted, seconds = recovery(run_dir, killed_at, starts_before)
        print(f"trains again within 60 s: {seconds is not None and seconds < 60}")
        if seconds is not None:
            # Not checked (it depends on the machine); for the measurement.
            print(f"measured: rank 0 restarted {restarted:.2f} s and trained its first step {seconds:.2f} s after "
                  f"the node was lost")
    status, text = finish(run, log)
    print(f"run exit: {status}")
    wait_until(lambda: not run_processes(run_dir), 30)
    print(f"processes left: {len(run_processes(run_dir))}")
    sys.stdout.write(text)


main()
