#include "plan/derive_tables.h"

#include <optional>

#include "plan_format/rank_layout.h"
#include "plan_format/slices.h"

namespace avf::runtime {

namespace {

auto AxesOf(const PlanLayout& l) -> plan_format::Axes { return {l.tensor, l.data, l.pipeline}; }

// The world size when the rules can be applied; nullopt, reported, otherwise.
auto CheckRuleParameters(const RunPlan& plan, Problems& p) -> std::optional<int64_t> {
  const PlanLayout& l = plan.layout;
  int64_t td = 0, world = 0;
  if (MulOverflows(l.tensor, l.data, &td) || MulOverflows(td, l.pipeline, &world) || world > kMaxRanks) {
    p.Addf("layout", "data x tensor x pipeline = {} x {} x {} is more than the {} ranks a plan may have", l.data,
           l.tensor, l.pipeline, kMaxRanks);
    return std::nullopt;
  }
  bool ok = true;
  if (plan.training.gpus != world) {
    p.Addf("training.gpus", "{} GPUs, but the layout has data x tensor x pipeline = {} x {} x {} = {} ranks",
           plan.training.gpus, l.data, l.tensor, l.pipeline, world);
    ok = false;
  }
  if (plan.training.global_batch % l.data != 0) {
    p.Addf("training.global_batch", "{} sequences do not divide among layout.data = {} data ranks",
           plan.training.global_batch, l.data);
    ok = false;
  }
  if (l.zero > 0 && static_cast<int64_t>(plan.stage_parameters.size()) != l.pipeline) {
    p.Addf("stage_parameters", "{} entries, expected one per pipeline stage ({}), which the ZeRO slices divide",
           plan.stage_parameters.size(), l.pipeline);
    ok = false;
  }
  if (!ok) return std::nullopt;
  return world;
}

void DeriveRanks(RunPlan& plan, int64_t world) {
  plan_format::Axes axes = AxesOf(plan.layout);
  plan.ranks.resize(static_cast<size_t>(world));
  for (int64_t r = 0; r < world; ++r) {
    plan_format::Coord c = plan_format::CoordOf(axes, r);
    plan_format::Place at = plan_format::PlaceOf(r, plan.hardware.gpus_per_node, plan.hardware.nodes_per_leaf);
    plan.ranks[static_cast<size_t>(r)] = {r, at.node, at.gpu, at.leaf, c.tensor, c.data, c.pipeline};
  }
}

void DeriveGroups(RunPlan& plan) {
  using plan_format::Axis;
  plan_format::Axes axes = AxesOf(plan.layout);
  plan.groups.tensor = plan_format::AxisGroups(axes, Axis::Tensor);
  plan.groups.data = plan_format::AxisGroups(axes, Axis::Data);
  plan.groups.pipeline = plan_format::AxisGroups(axes, Axis::Pipeline);
  // None with one pipeline stage: the embedding and the output share a rank.
  if (plan.model.tied_embeddings) plan.groups.embedding = plan_format::EmbeddingGroups(axes);
}

void DeriveSlices(RunPlan& plan) {
  const PlanLayout& l = plan.layout;
  plan.data.slices.resize(static_cast<size_t>(l.data));
  for (int64_t d = 0; d < l.data; ++d) {
    plan_format::Slice s = plan_format::DataSliceOf(plan.training.global_batch, l.data, d);
    plan.data.slices[static_cast<size_t>(d)] = {d, s.first, s.count};
  }
  plan.zero.slices.clear();
  if (l.zero == 0) return;
  plan.zero.slices.reserve(static_cast<size_t>(l.data * l.pipeline));
  for (int64_t stage = 0; stage < l.pipeline; ++stage) {
    for (int64_t d = 0; d < l.data; ++d) {
      plan_format::Slice s = plan_format::ZeroSliceOf(plan.stage_parameters[static_cast<size_t>(stage)], l.data, d);
      plan.zero.slices.push_back({stage, d, s.first, s.count});
    }
  }
}

}  // namespace

void DeriveTables(RunPlan& plan, Problems& p) {
  std::optional<int64_t> world = CheckRuleParameters(plan, p);
  if (!world) return;
  DeriveRanks(plan, *world);
  DeriveGroups(plan);
  DeriveSlices(plan);
}

}  // namespace avf::runtime
