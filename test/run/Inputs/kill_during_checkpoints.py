"""kill -9 at random moments of a run that checkpoints every step, then
resume: the resumed run starts from a committed checkpoint that verifies
(never a half-written one), exits 0, and the metrics file holds every step
once with the losses of a run that was never killed.

Usage: kill_during_checkpoints.py AVF_RUN PLAN DATA_DIR WORK_DIR TRIALS
"""
import json
import os
import random
import signal
import subprocess
import sys
import time


def losses(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def wait_for_step(metrics, step, process):
    """Until the metrics file reports `step` (or the run ended)."""
    while process.poll() is None:
        try:
            with open(metrics) as f:
                if sum(1 for _ in f) >= step:
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.002)


def main():
    avf_run, plan, data, work, trials = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    base = [avf_run, "--plan", plan, "--data-dir", data]
    ref_dir = os.path.join(work, "reference")
    subprocess.run(base + ["--checkpoint-dir", os.path.join(ref_dir, "ckpt"), "--run-dir", ref_dir],
                   check=True, capture_output=True)
    reference = {m["step"]: m["loss"] for m in losses(os.path.join(ref_dir, "metrics.jsonl"))}
    rng = random.Random(7)
    for trial in range(trials):
        where = os.path.join(work, f"trial{trial}")
        args = base + ["--checkpoint-dir", os.path.join(where, "ckpt"), "--run-dir", where]
        # Killed once or twice before the run that finishes.
        for _ in range(1 + trial % 2):
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for_step(os.path.join(where, "metrics.jsonl"), rng.randint(1, len(reference) - 2), p)
            time.sleep(rng.uniform(0, 0.02))  # into the step's checkpoint, or the next step
            p.send_signal(signal.SIGKILL)
            p.wait()
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"trial {trial}: the resumed run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        lines = losses(os.path.join(where, "metrics.jsonl"))
        steps = [m["step"] for m in lines]
        if steps != sorted(set(steps)) or steps != list(range(1, len(reference) + 1)):
            sys.exit(f"trial {trial}: the metrics hold steps {steps}")
        for m in lines:
            if m["loss"] != reference[m["step"]]:
                sys.exit(f"trial {trial}: step {m['step']} loss {m['loss']}, never killed: {reference[m['step']]}")
        resumed = [l for l in done.stdout.splitlines() if l.startswith("resuming from")]
        print(f"trial {trial}: {resumed[0] if resumed else 'started over (killed before the first checkpoint)'}; "
              f"{len(steps)} steps once each, losses exact")


if __name__ == "__main__":
    main()
