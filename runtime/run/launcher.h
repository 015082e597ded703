// The per-node launcher of avf-run. A Kubernetes pod (PyTorchJob, JobSet) is
// one node with PET_NPROC_PER_NODE GPUs, and its one container command starts
// one avf-run: that process resolves the node (plan/identity.h), then starts
// one avf-run per local rank — its own binary and arguments plus
// --local-rank=i — and supervises them, like torchrun does for PyTorch.
// `aviflowc run --local` starts one such launcher per node of the plan.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plan/identity.h"
#include "plan_format/launch.h"

namespace avf::run {

// The variable that names a process's supervisor (aviflowc for a node
// launcher, the launcher for a rank): when the supervisor dies, the process
// gets SIGTERM and stops like on a stop signal.
constexpr const char* kSupervisorVariable = plan_format::kEnvSupervisorPid;

// Asks for SIGTERM at the death of the parent when kSupervisorVariable names
// it; when the parent is already gone, stops with SIGTERM at once.
void FollowSupervisor();

// True when this process is one rank: --rank or --local-rank, LOCAL_RANK, or
// torchrun's RANK name it. Otherwise a node with several ranks needs LaunchNode.
auto LocalRankGiven(const runtime::IdentityFlags& flags, const runtime::Environment& env) -> bool;

// The thread defaults of one of `ranks` processes sharing this process's
// cores (its CPU affinity), as NAME=value, for the variables that are not
// set: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS = cores / ranks (at least 1),
// OMP_WAIT_POLICY=PASSIVE (OpenMP threads that spin after a loop take the
// cores from the BLAS's threads), and OPENBLAS_CORETYPE when the library
// picked kernels narrower than the CPU runs (cpu/blas_core.h).
auto ThreadDefaults(int64_t ranks) -> std::vector<std::string>;

// A rank without a launcher: when ThreadDefaults(1) is not empty, sets them
// and executes this avf-run again with `args` (OpenMP and the BLAS read the
// variables when they load, before main). Returns when nothing was missing,
// or when the new image could not start (the run goes on without them).
void ApplyThreadDefaults(const std::vector<std::string>& args);

// Starts node.nproc_per_node children, each in its own process group with the
// ThreadDefaults(nproc_per_node), and waits for them. Once any child has
// exited, the others get a grace period to exit on their own (a failed peer is
// noticed within a second; ranks that end or stop together exit together),
// then SIGTERM, then SIGKILL, always. SIGTERM and SIGINT sent to the launcher
// (a pod being deleted) go to every child. A failure is reported with its rank
// and cause. Returns the exit status for main: 0 when every child succeeded,
// else that of the first rank killed by a signal, else of the first failure,
// else of the ranks' stop (128 + signal). `every_quarter_second`, when
// given, runs about four times a second while the ranks run (an elastic
// host's look for launchers waiting to join).
auto LaunchNode(const std::vector<std::string>& args, const runtime::NodeIdentity& node,
                const std::function<void()>& every_quarter_second = {}) -> int;

// Sends SIGTERM to every rank of the node, as a stop the launcher itself
// decided (not one passed on): the ranks stop at the same step, with a
// checkpoint.
void StopRanks();

}  // namespace avf::run
