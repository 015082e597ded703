// Which rank this avf-run is, from its flags and the environment the emitted
// manifests set (docs/deploy.md, "Rank environment"), checked against the
// plan. Sources, per value, first found wins:
//
//   1. flags: --rank --world-size --local-rank --node-rank --nproc-per-node
//      --master-addr --master-port
//   2. PET_* (PyTorchJob, JobSet, Slurm): PET_NODE_RANK, PET_NPROC_PER_NODE,
//      PET_NNODES, with LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
//      Under PyTorchJob RANK is the pod's rank, so while any PET_* variable
//      is set RANK, GROUP_RANK and LOCAL_WORLD_SIZE are not read.
//   3. torchrun: RANK, WORLD_SIZE, LOCAL_RANK, GROUP_RANK, LOCAL_WORLD_SIZE,
//      MASTER_ADDR, MASTER_PORT.
//   4. nothing set and a one-rank plan: rank 0 of 1 on 127.0.0.1:29500.
//
// global rank = node_rank x nproc_per_node + local_rank (the plan's order).
// Values that are given by two sources and disagree are errors naming both,
// never silently resolved.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include "plan/plan.h"

namespace avf::runtime {

// The flags as typed (nullopt: not given), parsed here strictly so that a
// flag and an environment variable get the same checks and messages.
struct IdentityFlags {
  std::optional<std::string> rank, world_size, local_rank, node_rank, nproc_per_node, master_addr, master_port;
};

// Variable name -> value; a variable set to "" is set (and then invalid).
using Environment = std::map<std::string, std::string, std::less<>>;

// Every variable ResolveIdentity may read.
auto IdentityVariables() -> llvm::ArrayRef<const char*>;

// The IdentityVariables() that are set in this process.
auto ProcessEnvironment() -> Environment;

// Where the identity came from, for the start-up log.
enum class IdentityConvention { Flags, Pet, Torchrun, SingleRank };
auto Name(IdentityConvention c) -> llvm::StringRef;

// Each value's source as `NAME=value (environment)`, `--flag=value (flag)`,
// `plan.json`, a default, or the formula it was derived by.
struct IdentityOrigins {
  std::string rank, world_size, local_rank, node_rank, nproc_per_node, nnodes, master_addr, master_port;
};

// One node: what a per-node launcher needs before it starts its processes.
struct NodeIdentity {
  int64_t node_rank = 0, nproc_per_node = 1, nnodes = 1, world_size = 1;
  std::string master_addr;
  int master_port = 0;
  IdentityConvention convention = IdentityConvention::SingleRank;
  IdentityOrigins origin;
};

struct RankIdentity : NodeIdentity {
  int64_t rank = 0, local_rank = 0;
};

// The node's identity; a local rank is not needed (and not checked) here.
auto ResolveNode(const IdentityFlags& flags, const Environment& env, const RunPlan& plan)
    -> llvm::Expected<NodeIdentity>;

// One process's identity. With several processes per node and no
// --local-rank or LOCAL_RANK, it fails: a per-node avf-run resolves the node
// and starts RanksOfNode() with --local-rank each.
auto ResolveIdentity(const IdentityFlags& flags, const Environment& env, const RunPlan& plan)
    -> llvm::Expected<RankIdentity>;

// Consecutive global ranks, iterable: `for (int64_t r : RanksOfNode(n, 8))`.
struct RankRange {
  int64_t first = 0, count = 0;
  struct Iterator {
    int64_t r;
    auto operator*() const -> int64_t { return r; }
    auto operator++() -> Iterator& { return ++r, *this; }
    auto operator!=(const Iterator& o) const -> bool { return r != o.r; }
  };
  auto begin() const -> Iterator { return {first}; }
  auto end() const -> Iterator { return {first + count}; }
  auto contains(int64_t r) const -> bool { return r >= first && r - first < count; }
};

// node_rank x nproc ... node_rank x nproc + nproc - 1; empty for a negative
// input or a product that overflows.
auto RanksOfNode(int64_t node_rank, int64_t nproc) -> RankRange;

// "rank 21 of 32, local rank 5 of 8 on node 2 of 4 (PET): rendezvous
// host:29500", then each value's origin.
auto Describe(const RankIdentity& id) -> std::string;

}  // namespace avf::runtime
