// plan.json `elastic`: every node count's layout is one the plan's rules
// allow at that count (plan-format.md, Validation), so that avf-run can
// train on any of them.
#include <numeric>

#include <fmt/format.h>

#include "plan/validate.h"

namespace avf::runtime {

namespace {

auto ChunksPerStage(const PlanLayout& l) -> int64_t {
  return l.schedule == PipelineSchedule::Interleaved ? l.virtual_stages : 1;
}

auto SameLayout(const PlanLayout& a, const PlanLayout& b) -> bool {
  return a.data == b.data && a.tensor == b.tensor && a.pipeline == b.pipeline && a.virtual_stages == b.virtual_stages &&
         a.schedule == b.schedule && a.zero == b.zero && a.micro_batch == b.micro_batch && a.recompute == b.recompute &&
         a.sequence_parallel == b.sequence_parallel;
}

// The degrees of one count multiply to its GPUs, its data ranks and
// micro-batches divide the batch, and its stages hold every layer once.
void CheckMember(const RunPlan& plan, const PlanElasticLayout& m, const std::string& at, Problems& p) {
  const PlanLayout& l = m.layout;
  if (l.data < 1 || l.tensor < 1 || l.pipeline < 1 || l.micro_batch < 1 || l.virtual_stages < 1) return;
  if (m.gpus != m.nodes * plan.hardware.gpus_per_node) {
    p.Addf(at + ".gpus", "{} GPUs, but {} nodes of {} GPUs are {}", m.gpus, m.nodes, plan.hardware.gpus_per_node,
           m.nodes * plan.hardware.gpus_per_node);
  }
  if (l.data * l.tensor * l.pipeline != m.gpus) {
    p.Addf(at, "data x tensor x pipeline = {} x {} x {} = {}, but the count has {} GPUs", l.data, l.tensor, l.pipeline,
           l.data * l.tensor * l.pipeline, m.gpus);
  }
  int64_t batch = plan.training.global_batch;
  if (batch % (l.data * l.micro_batch) != 0 || m.micro_batches_per_step != batch / (l.data * l.micro_batch)) {
    p.Addf(at + ".micro_batches_per_step",
           "{} micro-batches of {} on {} data ranks do not make the global batch of {} sequences",
           m.micro_batches_per_step, l.micro_batch, l.data, batch);
  }
  auto chunks = static_cast<size_t>(l.pipeline * ChunksPerStage(l));
  int64_t layers = std::accumulate(m.chunk_layers.begin(), m.chunk_layers.end(), int64_t{0});
  if (m.chunk_layers.size() != chunks || layers != plan.model.layers) {
    p.Addf(at + ".chunk_layers", "{} chunks holding {} layers, expected {} chunks holding the model's {}",
           m.chunk_layers.size(), layers, chunks, plan.model.layers);
  }
  if (m.stage_parameters.size() != static_cast<size_t>(l.pipeline)) {
    p.Addf(at + ".stage_parameters", "{} entries, expected one per pipeline stage ({})", m.stage_parameters.size(),
           l.pipeline);
  }
}

}  // namespace

void CheckElastic(const RunPlan& plan, Problems& p) {
  if (!plan.elastic) return;
  const PlanElastic& e = *plan.elastic;
  if (e.min_nodes > e.max_nodes) {
    p.Addf("elastic", "min_nodes = {} is more than max_nodes = {}", e.min_nodes, e.max_nodes);
  }
  bool own = false;
  int64_t previous = 0;
  for (size_t i = 0; i < e.layouts.size(); ++i) {
    const PlanElasticLayout& m = e.layouts[i];
    std::string at = fmt::format("elastic.layouts[{}]", i);
    if (m.nodes <= previous || m.nodes < e.min_nodes || m.nodes > e.max_nodes) {
      p.Addf(at + ".nodes", "{} nodes: the counts rise from min_nodes = {} to max_nodes = {}, each once", m.nodes,
             e.min_nodes, e.max_nodes);
    }
    previous = m.nodes;
    CheckMember(plan, m, at, p);
    if (m.nodes != plan.hardware.nodes) continue;
    own = true;
    if (!SameLayout(m.layout, plan.layout)) {
      p.Addf(at, "the layout at the plan's own {} nodes is not the plan's `layout`", m.nodes);
    }
  }
  if (!own) p.Addf("elastic.layouts", "no entry for the plan's own {} nodes", plan.hardware.nodes);
}

}  // namespace avf::runtime
