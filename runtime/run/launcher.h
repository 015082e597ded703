// The per-node launcher of avf-run. A Kubernetes pod (PyTorchJob, JobSet) is
// one node with PET_NPROC_PER_NODE GPUs, and its one container command starts
// one avf-run: that process resolves the node (plan/identity.h), then starts
// one avf-run per local rank — its own binary and arguments plus
// --local-rank=i — and supervises them, like torchrun does for PyTorch.
#pragma once

#include <string>
#include <vector>

#include "plan/identity.h"

namespace avf::run {

// True when this process is one rank: --rank or --local-rank, LOCAL_RANK, or
// torchrun's RANK name it. Otherwise a node with several ranks needs LaunchNode.
auto LocalRankGiven(const runtime::IdentityFlags& flags, const runtime::Environment& env) -> bool;

// Starts node.nproc_per_node children and waits for them. When one fails the
// others get a grace period to report the failed peer themselves (their
// communicators notice within a second), then SIGTERM, then SIGKILL. SIGTERM
// and SIGINT sent to the launcher (a pod being deleted) go to every child.
// Sets OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to the node's cores divided
// by the ranks, and OMP_WAIT_POLICY=PASSIVE, when they are not set. Returns the exit status for main: 0
// when every child succeeded, else the first failure's status.
auto LaunchNode(const std::vector<std::string>& args, const runtime::NodeIdentity& node) -> int;

}  // namespace avf::run
