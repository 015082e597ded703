// `avf-run preflight`: a short check of a job's nodes before it trains,
// started exactly like a training run (one avf-run per node, which starts a
// rank per GPU; the same identity, rendezvous and token), that names the
// node that is not fit to train. Each rank, once it joined the store:
//
//   1. checks its device (a GPU: visible, selectable, holds the buffer; a
//      CPU rank: nothing); each node's local rank 0 also checks the node's
//      InfiniBand ports (ib_ports.h); every result goes to the store;
//   2. rank 0 waits for every rank's and node's results (the join timeout
//      names the ranks that never came) and tells every rank whether to go
//      on: not after a failed check, so a bad node fails the job at once;
//   3. builds the world communicator (NCCL on GPUs, TCP on CPUs) and a
//      communicator per node, and times all-reduces over both after one
//      whose sum is checked; the times go to the store;
//   4. rank 0 prints one line per node and the world's bus bandwidth, and
//      puts the verdict in the store; every rank exits with it (0 passed,
//      1 failed), and each node's local rank 0 prints the problems.
#pragma once

#include <cstdint>
#include <optional>

#include "plan/identity.h"
#include "plan/plan.h"
#include "run/preflight_report.h"
#include "run/world.h"

namespace avf::run::preflight {

struct Options {
  uint64_t bytes = 0;  // per rank, a multiple of 4 (fp32 elements)
  int64_t iterations = 20, warmup = 5;
  Limits limits;
  bool gpu = false;
  double join_timeout_s = 300, peer_timeout_s = 60;
};

// The defaults of --bytes: a GPU's links need a large message to reach their
// bandwidth; the TCP mesh of a CPU run is slow, and a few MiB show it.
inline constexpr uint64_t kGpuBytes = uint64_t{256} << 20;
inline constexpr uint64_t kCpuBytes = uint64_t{4} << 20;

// One rank's preflight. `world` holds the store joined (null for a world of
// one rank, which needs none). Returns the exit status: 0 when every check
// passed, 1 otherwise.
auto RunRank(const runtime::RunPlan& plan, const runtime::RankIdentity& id, World& world, const Options& o) -> int;

}  // namespace avf::run::preflight
