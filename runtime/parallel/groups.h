// Process groups of one rank: every communicator
// a rank of a parallel plan needs, split from its world communicator along the
// plan's groups (docs/plan-format.md "ranks" and "groups"; ranks in Megatron's
// order, tensor fastest, then data, then pipeline).
//
//   auto groups = parallel::BuildGroups(*world, plan);
//   groups->tensor->AllReduce(partial, n, comm::ReduceOp::kSum);  // plan.groups.tensor, ring order
//   groups->data->AllReduce(grads, n, comm::ReduceOp::kAvg);
//   groups->SendLink(stage + 1)->Send(act, n, /*peer=*/1);        // on the sender thread
//   groups->RecvLink(stage - 1)->Recv(act, n, /*peer=*/0);        // on the main thread
//
// Each group communicator is world.Split(colour = index of the group in
// plan.groups.X that holds this rank, key = the rank's position in it), so its
// rank order is the plan's ring order: tensor->rank() is the position in the
// tensor group (= t), data->rank() = d, pipeline->rank() = p.
//
// Split order. Split is collective, so every rank makes the same calls in the
// same order (a rank that is in no group still takes part, with kNoColor):
//   1. world.Split: tensor, data, pipeline;
//   2. world.Split: embedding, only when plan.groups.embedding is non-empty
//      (every rank sees the same plan; ranks outside it pass kNoColor);
//   3. pipeline->Split, once per directed stage pair of PipelineLinks(P,
//      wrap) in that order: colour 0 for the two stages of the pair (key 0
//      the sender, key 1 the receiver), kNoColor for the others.
// The plan is checked before any rank connects (ValidatePlan, then
// CheckRunnable), so every rank makes these calls or none does (no rank is
// left waiting in a Split that the others never call).
//
// Why every direction has its own communicator: the pipeline executor posts
// its sends (activations forward, gradients backward) from a sender thread
// while its main thread blocks in receives, and a communicator must only ever
// be used by one thread (its message sequence numbers and sockets are not
// shared safely). With one 2-rank communicator per directed pair, the sender
// thread owns every SendLink and the main thread every RecvLink. The
// schedule's messages on a pair are consumed in sending order
// (schedule.h), so one ordered stream per direction needs no tags.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <llvm/Support/Error.h>

#include "comm/communicator.h"
#include "plan/plan.h"

namespace avf::parallel {

// A rank's coordinates in the plan: t, d, p (plan.ranks[rank]).
struct RankCoords {
  int64_t tensor = 0, data = 0, pipeline = 0;
  friend auto operator==(const RankCoords&, const RankCoords&) -> bool = default;
};

// A directed pair of pipeline stages: `from` sends to `to`.
struct StageLink {
  int64_t from = 0, to = 0;
  friend auto operator==(const StageLink&, const StageLink&) -> bool = default;
  friend auto operator<(const StageLink& a, const StageLink& b) -> bool {
    return std::pair(a.from, a.to) < std::pair(b.from, b.to);
  }
};

// Whether the plan's schedule sends between stage P - 1 and stage 0 (the
// interleaved wrap-around: chunk c of stage 0 receives from chunk c - 1 of
// stage P - 1). As schedule_print.cpp, the chunks are layout.virtual_stages
// with the interleaved schedule and 1 otherwise, so a 1F1B or GPipe plan
// never wraps, whatever its virtual_stages.
auto HasWrapAround(const runtime::RunPlan& plan) -> bool;

// The directed stage pairs that exchange messages, in the order BuildGroups
// splits them: (0 -> 1), (1 -> 0), (1 -> 2), (2 -> 1), ..., (P-2 -> P-1),
// (P-1 -> P-2); then, with `wrap_around` and P > 2, (P-1 -> 0), (0 -> P-1).
// With P = 2 the wrap-around pairs are the neighbour pairs already listed;
// with P = 1 there are none.
auto PipelineLinks(int64_t stages, bool wrap_around) -> std::vector<StageLink>;

// Every communicator of one rank. tensor, data and pipeline are never null
// (a group of one rank is a communicator of size 1); embedding is null when
// the rank is in no embedding group (no tied embeddings, P = 1, or a middle
// stage).
struct RankGroups {
  int world_rank = 0;
  RankCoords coords;
  int64_t stages = 1;  // P
  std::unique_ptr<comm::Communicator> tensor, data, pipeline, embedding;
  // The 2-rank communicators of this rank's links (only pairs that include
  // its own stage): rank 0 the sender, rank 1 the receiver.
  std::map<StageLink, std::unique_ptr<comm::Communicator>> links;

  // The link this rank sends to `to_stage` over (the peer is rank 1), or
  // nullptr when its stage sends nothing there. Owned by the sender thread.
  auto SendLink(int64_t to_stage) const -> comm::Communicator*;
  // The link this rank receives from `from_stage` over (the peer is rank 0),
  // or nullptr. Owned by the thread that receives (the main thread).
  auto RecvLink(int64_t from_stage) const -> comm::Communicator*;
};

// Builds every group of world.rank() from the plan, collectively over the
// world (every rank of the plan calls it; world.size() is the plan's rank
// count). ValidatePlan has checked the groups; the errors are the
// communicators' own failures (prefixed with the group being built) and a
// Split whose result is not the group's size and position, all
// comm::CommErrors, like every communicator failure.
auto BuildGroups(comm::Communicator& world, const runtime::ValidPlan& plan) -> llvm::Expected<RankGroups>;

}  // namespace avf::parallel
