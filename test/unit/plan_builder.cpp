#include "plan_builder.h"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan_groups.h"

namespace avf::testing {

using runtime::RunPlan;

namespace {

// Layers of each block c·P + s and where it starts.
auto BlockSizes(const PlanShape& s, int64_t blocks) -> std::vector<int64_t> {
  if (!s.blocks.empty()) return s.blocks;
  return std::vector<int64_t>(static_cast<size_t>(blocks), s.model.layers / blocks);
}

void AddStages(RunPlan& p, const PlanShape& s) {
  // Chunks are virtual_stages under the interleaved schedule only (plan-format.md "stages").
  const int64_t P = s.pipeline;
  const int64_t C = s.schedule == runtime::PipelineSchedule::Interleaved ? s.chunks : 1;
  std::vector<int64_t> sizes = BlockSizes(s, P * C), starts(sizes.size(), 0);
  for (size_t b = 1; b < sizes.size(); ++b) starts[b] = starts[b - 1] + sizes[b - 1];
  for (int64_t st = 0; st < P; ++st) {
    model::ShardSpec shard{.tensor_size = s.tensor, .embedding = st == 0, .output = st == P - 1};
    for (int64_t c = 0; c < C; ++c) {
      size_t block = static_cast<size_t>(c * P + st);
      int64_t layers = sizes.at(block), first = starts.at(block);
      p.stages.push_back({st, c, first, layers, st == 0 && c == 0, st == P - 1 && c == C - 1});
      shard.chunks.push_back({first, layers});
    }
    int64_t psi = model::LayoutOf(s.model, shard).total;
    p.stage_parameters.push_back(psi);
    for (int64_t d = 0; s.zero > 0 && d < s.data; ++d) {
      int64_t part = psi / s.data;
      p.zero.slices.push_back({st, d, part * d, d == s.data - 1 ? psi - part * d : part});
    }
  }
  p.zero.stage = s.zero;
}

// 8 GPUs per node on one switch; 1000 tokens per data rank in a shard each.
void AddHardwareAndData(RunPlan& p, const PlanShape& s) {
  int64_t world = s.tensor * s.data * s.pipeline;
  p.hardware.cluster = p.hardware.node = p.hardware.gpu = "x";
  p.hardware.gpus_per_node = 8;
  p.hardware.nodes = p.hardware.cluster_nodes = (world + 7) / 8;
  p.hardware.leaves = 1;
  p.data.name = "d";
  p.data.tokens = 1000 * s.data;
  p.data.shards = s.data;
  for (int64_t d = 0; d < s.data; ++d)
    p.data.slices.push_back({d, s.micro_batch * s.micro_batches * d, s.micro_batch * s.micro_batches});
}

}  // namespace

auto ShapeName(const PlanShape& s) -> std::string {
  const char* kind = s.schedule == runtime::PipelineSchedule::Interleaved ? "interleaved"
                     : s.schedule == runtime::PipelineSchedule::Gpipe     ? "gpipe"
                                                                          : "1f1b";
  return fmt::format("{}_T{}D{}P{}V{}_{}_zero{}_mb{}x{}{}{}{}", s.model.arch == model::Arch::Gpt2 ? "gpt2" : "llama",
                     s.tensor, s.data, s.pipeline, s.chunks, kind, s.zero, s.micro_batches, s.micro_batch,
                     s.sequence_parallel ? "_sp" : "", s.precision == runtime::Precision::Bf16 ? "_bf16" : "",
                     s.blocks.empty() ? "" : fmt::format("_layers{}", fmt::join(s.blocks, "_")));
}

auto MakePlan(const PlanShape& s) -> RunPlan {
  RunPlan p;
  p.job.name = "made";
  const model::ModelConfig& m = s.model;
  p.model.arch = m.arch == model::Arch::Llama ? runtime::Arch::Llama : runtime::Arch::Gpt2;
  p.model.layers = m.layers, p.model.hidden = m.hidden, p.model.heads = m.heads, p.model.kv_heads = m.kv_heads;
  p.model.ffn = m.ffn, p.model.vocab = m.vocab, p.model.seq_len = m.seq_len,
  p.model.tied_embeddings = m.tied_embeddings;
  p.layout.tensor = s.tensor, p.layout.data = s.data, p.layout.pipeline = s.pipeline;
  p.layout.virtual_stages = s.chunks, p.layout.schedule = s.schedule, p.layout.zero = s.zero;
  p.layout.micro_batch = s.micro_batch, p.layout.sequence_parallel = s.sequence_parallel;
  p.layout.rank_order = "tensor,data,pipeline";
  p.training.precision = s.precision;
  p.training.gpus = s.tensor * s.data * s.pipeline;
  p.training.micro_batch = s.micro_batch, p.training.micro_batches_per_step = s.micro_batches;
  p.training.global_batch = s.micro_batch * s.micro_batches * s.data;
  p.training.tokens_per_step = p.training.global_batch * m.seq_len;
  p.training.steps = 100;
  p.optimizer.kind = runtime::OptimizerKind::AdamW;
  AddRanksAndGroups(p, s.tensor, s.data, s.pipeline, 8, s.model.tied_embeddings);
  AddStages(p, s);
  AddHardwareAndData(p, s);
  return p;
}

auto MustBeValid(runtime::RunPlan plan) -> runtime::ValidPlan {
  llvm::Expected<runtime::ValidPlan> valid = runtime::ValidPlan::Of(std::move(plan), "made plan");
  if (!valid) {
    std::fprintf(stderr, "the test made an invalid plan:\n%s\n", llvm::toString(valid.takeError()).c_str());
    std::abort();
  }
  return std::move(*valid);
}

auto MakeValidPlan(const PlanShape& s) -> runtime::ValidPlan { return MustBeValid(MakePlan(s)); }

}  // namespace avf::testing
