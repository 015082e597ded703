#!/usr/bin/env python3
"""A one-machine Slurm cluster for a test: start it, run one batch script, stop it.

  one_node_slurm.py WORK SCRIPT_DIR [--timeout SECONDS] [--scrape URL]

Starts munged, slurmctld and slurmd (Debian's slurm-wlm 22.05 and munge) on
loopback with ports of their own and every file in WORK: no cgroups
(proctrack/linuxproc, task/none), the node declared with 256 CPUs, 2 TB of
memory and 8 GPUs as generic resources whose device files are ordinary
files in WORK (slurmd takes the configured node as it is:
SlurmdParameters=config_overrides). Then `sbatch slurm.sbatch` from
SCRIPT_DIR (the folder aviflowc wrote it to, with plan.json), waits for the
job to end, and prints its state and exit code (scontrol), then the job's
output file. The daemons are stopped whatever happens; a daemon that does
not start, or a job that does not end within --timeout (default 300 s), is
a failure that prints the daemons' logs. Exits 0 when the job completed.
With --scrape, URL (the job's metrics endpoint) is read while the job runs,
and the highest avf_step it served is printed.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(work, host):
    ctld, slurmd = free_port(), free_port()
    return f"""ClusterName=avftest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
AuthType=auth/munge
AuthInfo=socket={work}/munge.socket
CredType=cred/munge
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
PlugStackConfig={work}/plugstack.conf
NodeName={host} NodeAddr=127.0.0.1 CPUs=256 RealMemory=2000000 Gres=gpu:8 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    def __init__(self, work):
        self.work = os.path.abspath(work)
        self.env = dict(os.environ, SLURM_CONF=os.path.join(self.work, "slurm.conf"))

    def write_config(self):
        host = socket.gethostname().split(".")[0]
        for d in ("state", "spool"):
            os.makedirs(os.path.join(self.work, d), exist_ok=True)
        for i in range(8):
            open(os.path.join(self.work, f"gpu{i}"), "w").close()
        with open(os.path.join(self.work, "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(os.path.join(self.work, "munge.key"), 0o600)
        with open(self.env["SLURM_CONF"], "w") as f:
            f.write(slurm_conf(self.work, host))
        with open(os.path.join(self.work, "gres.conf"), "w") as f:
            f.write(f"NodeName={host} Name=gpu File={self.work}/gpu[0-7]\n")
        open(os.path.join(self.work, "plugstack.conf"), "w").close()

    def run(self, *command, check=True, cwd=None):
        return subprocess.run(list(command), env=self.env, capture_output=True, text=True, check=check, timeout=60,
                              cwd=cwd)

    def start(self):
        w = self.work
        self.run("munged", "--force", f"--socket={w}/munge.socket", f"--key-file={w}/munge.key",
                 f"--log-file={w}/munged.log", f"--pid-file={w}/munged.pid", f"--seed-file={w}/munged.seed")
        self.run("slurmctld", "-c")
        self.run("slurmd")
        deadline = time.time() + 60
        while time.time() < deadline:
            state = self.run("sinfo", "--noheader", "--format=%t", check=False).stdout.strip()
            if state == "idle":
                return
            time.sleep(0.5)
        raise RuntimeError(f"the node did not become idle (sinfo: {state!r})")

    def stop(self):
        self.run("scontrol", "shutdown", check=False)
        for name in ("slurmd", "slurmctld", "munged"):
            try:
                pid = int(open(os.path.join(self.work, f"{name}.pid")).read())
            except (OSError, ValueError):
                continue
            for _ in range(50):
                try:
                    os.kill(pid, 15 if name == "munged" else 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass

    def logs(self):
        out = []
        for name in ("slurmctld.log", "slurmd.log", "munged.log"):
            try:
                out.append(f"--- {name}\n" + open(os.path.join(self.work, name)).read()[-3000:])
            except OSError:
                pass
        return "\n".join(out)


def scraped_step(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    steps = [float(line.split()[-1]) for line in text.splitlines() if line.startswith("avf_step{")]
    return max(steps) if steps else None


def wait_for_job(cluster, job_id, timeout, scrape):
    deadline = time.time() + timeout
    highest = None
    while time.time() < deadline:
        if scrape:
            step = scraped_step(scrape)
            if step is not None:
                highest = step if highest is None else max(highest, step)
        shown = cluster.run("scontrol", "show", "job", job_id, check=False).stdout
        state = re.search(r"JobState=(\S+)", shown)
        if state and state.group(1) not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            return state.group(1), re.search(r"ExitCode=(\S+)", shown).group(1), shown, highest
        time.sleep(0.2 if scrape else 1)
    cluster.run("scancel", job_id, check=False)
    raise RuntimeError(f"job {job_id} did not end within {timeout} s")


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("work")
    p.add_argument("script_dir")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--scrape")
    a = p.parse_args(argv[1:])
    cluster = Cluster(a.work)
    cluster.write_config()
    try:
        cluster.start()
        submitted = cluster.run("sbatch", "--parsable", "slurm.sbatch", check=False, cwd=a.script_dir)
        if submitted.returncode != 0:
            raise RuntimeError(f"sbatch refused the script: {submitted.stderr.strip()}")
        job_id = submitted.stdout.strip().split(";")[0]
        state, exit_code, shown, highest = wait_for_job(cluster, job_id, a.timeout, a.scrape)
        out = re.search(r"StdOut=(\S+)", shown).group(1)
        print(f"job {job_id}: {state}, exit code {exit_code}")
        if a.scrape:
            print(f"scraped {a.scrape} while the job ran: " +
                  ("nothing" if highest is None else f"avf_step up to {highest:.0f}"))
        print(open(out).read() if os.path.exists(out) else f"(no output file {out})")
        return 0 if state == "COMPLETED" else 1
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        print(f"FAIL: {e}\n{cluster.logs()}")
        return 1
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
