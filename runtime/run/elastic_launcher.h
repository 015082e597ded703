// The node launcher of an elastic job (plan.json `elastic`, docs/elastic.md),
// started as the PyTorchJob operator starts an elastic job's pods:
//
//   PET_NNODES=MIN:MAX          the node counts the job may train on
//   PET_RDZV_ENDPOINT=HOST:PORT node slot 0's launcher, which hosts the rounds
//   AVF_NODE_SLOT=S             this launcher's slot, 0..MAX-1 (on Kubernetes
//                               the pod's replica index)
//   PET_MAX_RESTARTS=N          rounds this launcher may rejoin after its
//                               ranks failed (default 3)
//
// Each round (rendezvous/membership.h) decides how many nodes train and
// which; this launcher then starts its node's ranks with that count's layout
// (PET_NNODES=N, PET_NODE_RANK=k), or waits for the next round. When its
// ranks end without finishing the job (a lost peer, a stop it did not ask
// for, the host growing the job), it joins the next round; the ranks resume
// from the newest checkpoint, resharded to the new layout.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

#include "plan/identity.h"
#include "plan/plan.h"

namespace avf::run {

struct ElasticNode {
  int64_t min_nodes = 0, max_nodes = 0;
  std::string rdzv_host;
  int rdzv_port = 0;
  int slot = 0;
  int max_restarts = 3;
};

// nullopt when PET_NNODES is not MIN:MAX (a launcher of a fixed size); an
// error naming the variable for a malformed value or a missing one.
auto ReadElasticNode() -> llvm::Expected<std::optional<ElasticNode>>;

struct ElasticTimeouts {
  double join_s = 300;      // for the fewest nodes to join a round
  double last_call_s = 30;  // then, for more
};

// Runs this launcher's rounds until the job ends; the exit status for main.
auto LaunchElastic(const std::vector<std::string>& args, const runtime::PlanFile& file,
                   const runtime::IdentityFlags& flags, const ElasticNode& node, ElasticTimeouts timeouts) -> int;

}  // namespace avf::run
