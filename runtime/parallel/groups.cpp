#include "parallel/groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <string>
#include <string_view>

#include "comm/errors.h"
#include "rendezvous/errors.h"

namespace avf::parallel {

using runtime::RankGroup;
using runtime::RunPlan;

namespace {

using comm::CommErrc;
using comm::MakeError;
using CommPtr = std::unique_ptr<comm::Communicator>;

// Where one rank sits among the groups of one kind: the index of its group in
// plan.groups.<kind> (-1: in none) and its position in that group.
struct Slot {
  int group = -1;
  int position = 0;
};

// "ranks 2-3": the members as FormatRanks spells them (sorted; a data group
// of thousands of ranks must not print thousands of numbers).
auto Members(const RankGroup& group) -> std::string {
  std::vector<int> sorted(group.begin(), group.end());
  std::sort(sorted.begin(), sorted.end());
  return rendezvous::FormatRanks(sorted);
}

// Every rank's slot in `groups` (ValidatePlan checked that each rank is in
// exactly one group of each axis kind, and in at most one embedding group).
auto SlotsOf(const std::vector<RankGroup>& groups, int ranks) -> std::vector<Slot> {
  std::vector<Slot> slots(static_cast<size_t>(ranks));
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].size(); ++i) {
      Slot& s = slots[static_cast<size_t>(groups[g][i])];
      assert(s.group < 0);
      s = {static_cast<int>(g), static_cast<int>(i)};
    }
  }
  return slots;
}

// A communicator failure, its code kept, with what was being built in front.
auto Building(llvm::Error error, std::string_view what) -> llvm::Error {
  comm::Failure f = comm::TakeFailure(std::move(error));
  return MakeError(f.code, fmt::format("building {}: {}", what, f.message));
}

// world.Split for one kind: colour the index of this rank's group, key its
// position (so the child's ranks follow the ring order), kNoColor outside.
// A member's child is checked against the plan (size and rank).
auto SplitKind(comm::Communicator& world, const std::vector<Slot>& slots, const std::vector<RankGroup>& groups,
               std::string_view kind) -> llvm::Expected<CommPtr> {
  const Slot& s = slots[static_cast<size_t>(world.rank())];
  std::string what = s.group < 0 ? fmt::format("the {} groups", kind)
                                 : fmt::format("the {} group groups.{}[{}] ({})", kind, kind, s.group,
                                               Members(groups[static_cast<size_t>(s.group)]));
  auto child = world.Split(s.group < 0 ? comm::kNoColor : s.group, s.position);
  if (!child) return Building(child.takeError(), what);
  if (s.group < 0) return nullptr;
  size_t size = groups[static_cast<size_t>(s.group)].size();
  if (!*child || static_cast<size_t>((*child)->size()) != size || (*child)->rank() != s.position) {
    return MakeError(CommErrc::kMalformed,
                     fmt::format("building {}: Split gave rank {} of {}, expected rank {} of {}", what,
                                 *child ? (*child)->rank() : -1, *child ? (*child)->size() : 0, s.position, size));
  }
  return child;
}

// One pipeline->Split per directed pair, in PipelineLinks order: colour 0
// (key 0 the sender, key 1 the receiver) for the pair's two stages, kNoColor
// for the others. Only this rank's links are kept.
auto BuildLinks(RankGroups& groups, const std::vector<StageLink>& pairs) -> llvm::Error {
  int64_t me = groups.coords.pipeline;
  for (const StageLink& link : pairs) {
    bool member = link.from == me || link.to == me;
    std::string what = fmt::format("the pipeline link stage {} -> stage {}", link.from, link.to);
    auto child = groups.pipeline->Split(member ? 0 : comm::kNoColor, link.from == me ? 0 : 1);
    if (!child) return Building(child.takeError(), what);
    if (!member) continue;
    if (!*child || (*child)->size() != 2) {
      return MakeError(CommErrc::kMalformed, fmt::format("building {}: Split gave no 2-rank communicator", what));
    }
    groups.links.emplace(link, std::move(*child));
  }
  return llvm::Error::success();
}

}  // namespace

auto HasWrapAround(const RunPlan& plan) -> bool {
  return plan.layout.schedule == runtime::PipelineSchedule::Interleaved && plan.layout.virtual_stages > 1;
}

auto PipelineLinks(int64_t stages, bool wrap_around) -> std::vector<StageLink> {
  std::vector<StageLink> pairs;
  for (int64_t p = 0; p + 1 < stages; ++p) {
    pairs.push_back({p, p + 1});
    pairs.push_back({p + 1, p});
  }
  if (wrap_around && stages > 2) {
    pairs.push_back({stages - 1, 0});
    pairs.push_back({0, stages - 1});
  }
  return pairs;
}

auto RankGroups::SendLink(int64_t to_stage) const -> comm::Communicator* {
  auto it = links.find({coords.pipeline, to_stage});
  return it == links.end() ? nullptr : it->second.get();
}

auto RankGroups::RecvLink(int64_t from_stage) const -> comm::Communicator* {
  auto it = links.find({from_stage, coords.pipeline});
  return it == links.end() ? nullptr : it->second.get();
}

auto BuildGroups(comm::Communicator& world, const runtime::ValidPlan& valid) -> llvm::Expected<RankGroups> {
  const RunPlan& plan = *valid;
  int n = world.size();
  assert(static_cast<size_t>(n) == plan.ranks.size());
  RankGroups out;
  out.world_rank = world.rank();
  const runtime::PlanRank& me = plan.ranks[static_cast<size_t>(world.rank())];
  out.coords = {me.tensor, me.data, me.pipeline};
  out.stages = plan.layout.pipeline;
  const runtime::PlanGroups& g = plan.groups;
  auto tensor = SplitKind(world, SlotsOf(g.tensor, n), g.tensor, "tensor");
  if (!tensor) return tensor.takeError();
  out.tensor = std::move(*tensor);
  auto data = SplitKind(world, SlotsOf(g.data, n), g.data, "data");
  if (!data) return data.takeError();
  out.data = std::move(*data);
  auto pipeline = SplitKind(world, SlotsOf(g.pipeline, n), g.pipeline, "pipeline");
  if (!pipeline) return pipeline.takeError();
  out.pipeline = std::move(*pipeline);
  if (!g.embedding.empty()) {
    auto embedding = SplitKind(world, SlotsOf(g.embedding, n), g.embedding, "embedding");
    if (!embedding) return embedding.takeError();
    out.embedding = std::move(*embedding);
  }
  if (auto e = BuildLinks(out, PipelineLinks(out.stages, HasWrapAround(plan)))) return e;
  return out;
}

}  // namespace avf::parallel
