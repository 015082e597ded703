#include "plan/tables.h"

#include <algorithm>

#include "cost/counts.h"
#include "plan_format/rank_layout.h"

namespace avf::plan {

namespace {

auto I32(int64_t v) -> int32_t { return static_cast<int32_t>(v); }

auto AxesOf(const cost::Layout& l) -> plan_format::Axes { return {l.tensor, l.data, l.pipeline}; }

void BuildRanks(Plan& plan) {
  const cost::Hardware& hw = plan.job.hardware;
  plan_format::Axes axes = AxesOf(plan.chosen.layout);
  int64_t per_node = std::max<int64_t>(hw.gpus_per_node, 1);
  plan.ranks.reserve(axes.world());
  for (int64_t r = 0; r < axes.world(); ++r) {
    plan_format::Coord c = plan_format::CoordOf(axes, r);
    plan_format::Place at = plan_format::PlaceOf(r, per_node, hw.nodes_per_leaf);
    plan.ranks.push_back(
        Rank{I32(r), I32(at.node), I32(at.gpu), I32(at.leaf), I32(c.tensor), I32(c.data), I32(c.pipeline)});
  }
}

void AddGroups(Plan& plan, GroupKind kind, const std::vector<plan_format::Group>& groups) {
  int32_t index = 0;
  for (const plan_format::Group& g : groups) {
    Group& group = plan.groups.emplace_back(Group{kind, index++, {}});
    for (int64_t rank : g) group.ranks.push_back(I32(rank));
  }
}

void BuildGroups(Plan& plan) {
  plan_format::Axes axes = AxesOf(plan.chosen.layout);
  AddGroups(plan, GroupKind::Tensor, plan_format::AxisGroups(axes, plan_format::Axis::Tensor));
  AddGroups(plan, GroupKind::Data, plan_format::AxisGroups(axes, plan_format::Axis::Data));
  AddGroups(plan, GroupKind::Pipeline, plan_format::AxisGroups(axes, plan_format::Axis::Pipeline));
  // Tied embeddings live on the first and the last stage; their gradients
  // are summed across the two.
  if (plan.job.workload.model.tied_embeddings) {
    AddGroups(plan, GroupKind::Embedding, plan_format::EmbeddingGroups(axes));
  }
}

// Megatron's interleaved assignment: chunk c of stage s holds the
// (c * p + s)-th block of layers / (p * v) layers.
void BuildStages(Plan& plan) {
  const cost::Layout& l = plan.chosen.layout;
  const cost::ModelShape& m = plan.job.workload.model;
  int64_t chunks = l.schedule == cost::Schedule::Interleaved ? l.virtual_stages : 1;
  int64_t per_chunk = m.layers / (l.pipeline * chunks);
  for (int64_t s = 0; s < l.pipeline; ++s) {
    for (int64_t c = 0; c < chunks; ++c) {
      StageChunk chunk{I32(s), I32(c), (c * l.pipeline + s) * per_chunk, per_chunk, false, false};
      chunk.embedding = s == 0 && c == 0;
      chunk.output = s == l.pipeline - 1 && c == chunks - 1;
      plan.stages.push_back(chunk);
    }
  }
  for (int64_t s = 0; s < l.pipeline; ++s)
    plan.stage_params.push_back(cost::StageParamsPerRank(m, l.pipeline, l.tensor, s));
}

void BuildData(Plan& plan) {
  const cost::Layout& l = plan.chosen.layout;
  for (int64_t d = 0; d < l.data; ++d) {
    DataSlice slice;
    slice.data_rank = I32(d);
    slice.sequences_per_step = plan.job.workload.global_batch / l.data;
    slice.first_sequence = slice.sequences_per_step * d;
    plan.data.push_back(slice);
  }
}

void BuildZero(Plan& plan) {
  const cost::Layout& l = plan.chosen.layout;
  if (l.zero == 0) return;
  for (int64_t s = 0; s < l.pipeline; ++s) {
    int64_t total = plan.stage_params[s];
    for (int64_t d = 0; d < l.data; ++d) {
      int64_t first = total / l.data * d;
      int64_t end = d + 1 == l.data ? total : total / l.data * (d + 1);
      plan.zero.push_back(ZeroSlice{I32(s), I32(d), first, end - first});
    }
  }
}

}  // namespace

auto Name(GroupKind kind) -> std::string_view {
  switch (kind) {
    case GroupKind::Tensor: return "tensor";
    case GroupKind::Data: return "data";
    case GroupKind::Pipeline: return "pipeline";
    case GroupKind::Embedding: return "embedding";
  }
  return "tensor";
}

void BuildTables(Plan& plan) {
  BuildRanks(plan);
  BuildGroups(plan);
  BuildStages(plan);
  BuildData(plan);
  BuildZero(plan);
}

}  // namespace avf::plan
