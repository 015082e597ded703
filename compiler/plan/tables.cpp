#include "plan/tables.h"

#include <algorithm>

#include "cost/counts.h"
#include "cost/stages.h"
#include "plan_format/rank_layout.h"
#include "plan_format/slices.h"

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
// (c * p + s)-th contiguous block of layers, sized by cost/stages.h.
void BuildStages(Plan& plan) {
  const cost::Layout& l = plan.chosen.layout;
  const cost::ModelShape& m = plan.job.workload.model;
  int64_t chunks = cost::ChunksPerStage(l);
  int64_t all_chunks = l.pipeline * chunks;
  for (int64_t s = 0; s < l.pipeline; ++s) {
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t global = c * l.pipeline + s;
      StageChunk chunk{I32(s),
                       I32(c),
                       cost::ChunkFirstLayer(m.layers, all_chunks, global),
                       cost::ChunkLayers(m.layers, all_chunks, global),
                       false,
                       false};
      chunk.embedding = s == 0 && c == 0;
      chunk.output = s == l.pipeline - 1 && c == chunks - 1;
      plan.stages.push_back(chunk);
    }
  }
  plan.stage_params = cost::StageParamsOfLayout(m, l);
}

void BuildData(Plan& plan) {
  const cost::Layout& l = plan.chosen.layout;
  for (int64_t d = 0; d < l.data; ++d) {
    plan_format::Slice s = plan_format::DataSliceOf(plan.job.workload.global_batch, l.data, d);
    plan.data.push_back(DataSlice{I32(d), s.first, s.count});
  }
}

void BuildZero(Plan& plan) {
  const cost::Layout& l = plan.chosen.layout;
  if (l.zero == 0) return;
  for (int64_t s = 0; s < l.pipeline; ++s) {
    for (int64_t d = 0; d < l.data; ++d) {
      plan_format::Slice owned = plan_format::ZeroSliceOf(plan.stage_params[s], l.data, d);
      plan.zero.push_back(ZeroSlice{I32(s), I32(d), owned.first, owned.count});
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
