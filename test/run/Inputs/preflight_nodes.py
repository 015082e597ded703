"""Starts one `avf-run preflight` per node of a plan at once on this machine,
as the pods of a job would: PET_NODE_RANK, PET_NNODES, PET_NPROC_PER_NODE,
MASTER_ADDR, MASTER_PORT (a free port) and a job token, each node named
host-N by AVF_NODE_NAME. `--sysfs N=DEV:STATE,...` gives node N a fake sysfs
tree under OUT/sysfs-N (AVF_SYSFS_ROOT) whose adapters DEV have one port in
STATE (ACTIVE or DOWN); `--only N` starts node N alone; `--train 1` starts
a training run (`avf-run --plan PLAN ARGS`, e.g. with --preflight) instead
of `avf-run preflight`. Writes OUT/nodeN.out
and OUT/nodeN.err and prints `node N exit STATUS` per node started, in order.
Never waits more than 60 s.

usage: preflight_nodes.py AVF_RUN PLAN NODES NPROC OUT [--sysfs N=...]... [--only N] [--train 1] -- ARGS...
"""
import os
import socket
import subprocess
import sys

STATES = {"ACTIVE": ("4: ACTIVE", "5: LinkUp"), "DOWN": ("1: DOWN", "2: Polling")}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_sysfs(root, spec):
    for item in spec.split(","):
        device, state = item.split(":")
        port = os.path.join(root, "class", "infiniband", device, "ports", "1")
        os.makedirs(port)
        for name, text in zip(("state", "phys_state", "rate"), STATES[state] + ("400 Gb/sec (4X NDR)",)):
            with open(os.path.join(port, name), "w") as f:
                f.write(text + "\n")


def main():
    split = sys.argv.index("--")
    avf_run, plan, nodes, nproc, out = sys.argv[1:6]
    options, args = sys.argv[6:split], sys.argv[split + 1:]
    os.makedirs(out, exist_ok=True)
    sysfs, only, command = {}, None, [avf_run, "preflight", "--plan", plan]
    for flag, value in zip(options[::2], options[1::2]):
        if flag == "--sysfs":
            node, spec = value.split("=", 1)
            sysfs[int(node)] = os.path.join(out, f"sysfs-{node}")
            fake_sysfs(sysfs[int(node)], spec)
        elif flag == "--only":
            only = int(value)
        elif flag == "--train":
            command = [avf_run, "--plan", plan]
    base = dict(os.environ, AVF_JOB_TOKEN="preflight-test-token-0123456789", MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(free_port()), PET_NNODES=nodes, PET_NPROC_PER_NODE=nproc)
    procs = []
    for node in range(int(nodes)):
        if only is not None and node != only:
            continue
        env = dict(base, PET_NODE_RANK=str(node), AVF_NODE_NAME=f"host-{node}")
        if node in sysfs:
            env["AVF_SYSFS_ROOT"] = sysfs[node]
        with open(os.path.join(out, f"node{node}.out"), "w") as o, open(os.path.join(out, f"node{node}.err"), "w") as e:
            procs.append((node, subprocess.Popen(command + args, env=env, stdout=o, stderr=e)))
    for node, proc in procs:
        try:
            status = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            status = "timeout"
        print(f"node {node} exit {status}")


if __name__ == "__main__":
    main()
