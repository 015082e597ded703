#include "plan/elastic_plan.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "plan/derive_tables.h"
#include "plan/problems.h"

namespace avf::runtime {

namespace {

// plan.json's stage order (stage-major) from layers per chunk in block
// order: chunk c of stage s is block c x P + s.
auto StagesOf(const PlanLayout& l, const std::vector<int64_t>& chunk_layers) -> std::vector<PlanStage> {
  int64_t chunks = static_cast<int64_t>(chunk_layers.size()) / l.pipeline;
  std::vector<int64_t> first(chunk_layers.size(), 0);
  for (size_t b = 1; b < chunk_layers.size(); ++b) first[b] = first[b - 1] + chunk_layers[b - 1];
  std::vector<PlanStage> stages;
  for (int64_t s = 0; s < l.pipeline; ++s) {
    for (int64_t c = 0; c < chunks; ++c) {
      auto block = static_cast<size_t>(c * l.pipeline + s);
      bool first_block = block == 0, last_block = block + 1 == chunk_layers.size();
      stages.push_back({s, c, first[block], chunk_layers[block], first_block, last_block});
    }
  }
  return stages;
}

void TakePrediction(const PlanElasticLayout& m, PlanPredicted& p) {
  double low = p.step_time_s > 0 ? p.step_time_low_s / p.step_time_s : 1;
  double high = p.step_time_s > 0 ? p.step_time_high_s / p.step_time_s : 1;
  p.memory_per_gpu_bytes = m.memory_per_gpu_bytes;
  p.memory_breakdown_bytes = m.memory_breakdown_bytes;
  p.step_time_s = m.step_time_s;
  p.step_time_low_s = m.step_time_s * low;
  p.step_time_high_s = m.step_time_s * high;
  p.time_breakdown_s = m.time_breakdown_s;
  p.tokens_per_s = m.tokens_per_s;
  p.tflops_per_gpu = m.tflops_per_gpu;
  p.mfu = m.mfu;
  p.time_to_train_s = m.time_to_train_s;
}

auto Member(const RunPlan& plan, const PlanElasticLayout& m) -> RunPlan {
  RunPlan at = plan;
  PlanHardware& hw = at.hardware;
  hw.nodes = m.nodes;
  hw.ranks_per_node = std::min(m.gpus, hw.gpus_per_node);
  hw.leaves = hw.nodes_per_leaf > 0 ? (m.nodes + hw.nodes_per_leaf - 1) / hw.nodes_per_leaf : 1;
  at.training.gpus = m.gpus;
  at.training.micro_batch = m.layout.micro_batch;
  at.training.micro_batches_per_step = m.micro_batches_per_step;
  at.layout = m.layout;
  at.stages = StagesOf(m.layout, m.chunk_layers);
  at.stage_parameters = m.stage_parameters;
  at.zero.stage = m.layout.zero;
  at.ranks.clear();
  at.groups = {};
  at.data.slices.clear();
  at.zero.slices.clear();
  TakePrediction(m, at.predicted);
  return at;
}

}  // namespace

auto NodeCountsText(const RunPlan& plan) -> std::string {
  if (!plan.elastic) return std::to_string(plan.hardware.nodes);
  std::vector<int64_t> counts;
  for (const PlanElasticLayout& m : plan.elastic->layouts) counts.push_back(m.nodes);
  return plan_format::CountsText(counts);
}

auto AtNodeCount(const ValidPlan& plan, int64_t nodes) -> llvm::Expected<ValidPlan> {
  if (nodes == plan->hardware.nodes) return plan;
  const PlanElasticLayout* found = nullptr;
  if (plan->elastic) {
    for (const PlanElasticLayout& m : plan->elastic->layouts) {
      if (m.nodes == nodes) found = &m;
    }
  }
  if (!found) {
    std::string why = fmt::format("job `{}` has no layout on {} nodes; its plan.json has one on {} nodes",
                                  plan->job.name, nodes, NodeCountsText(*plan));
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", why.c_str());
  }
  RunPlan at = Member(*plan, *found);
  Problems p("plan.json");
  DeriveTables(at, p);
  if (llvm::Error e = p.TakeError()) return e;
  return ValidPlan::Of(std::move(at));
}

}  // namespace avf::runtime
