#include "parallel/runnable.h"

#include <optional>
#include <string>

#include <fmt/format.h>

#include "plan/cuts.h"

namespace avf::parallel {

namespace {

auto Fail(const std::string& message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// What this runtime cuts evenly or not at all (plan/cuts.h): the MLP width
// and the vocabulary over the tensor group, and sequence-parallel rows.
auto ShareProblem(const runtime::RunPlan& p) -> std::optional<std::string> {
  int64_t T = p.layout.tensor;
  if (auto ffn = runtime::TensorShareProblem("ffn", p.model.ffn, T)) return "plan.json: " + *ffn;
  if (auto vocab = runtime::TensorShareProblem("vocab", p.model.vocab, T)) {
    return "plan.json: " + *vocab + "; this avf-run does not pad the vocabulary";
  }
  if (!p.layout.sequence_parallel) return std::nullopt;
  if (auto rows = runtime::SequenceRowsProblem(p.layout.micro_batch, p.model.seq_len, T)) return "plan.json: " + *rows;
  return std::nullopt;
}

}  // namespace

auto ModelConfigOf(const runtime::RunPlan& p) -> model::ModelConfig {
  model::ModelConfig c;
  c.arch = p.model.arch == runtime::Arch::Llama ? model::Arch::Llama : model::Arch::Gpt2;
  c.layers = p.model.layers, c.hidden = p.model.hidden, c.heads = p.model.heads, c.kv_heads = p.model.kv_heads;
  c.ffn = p.model.ffn, c.vocab = p.model.vocab, c.seq_len = p.model.seq_len;
  c.tied_embeddings = p.model.tied_embeddings;
  return c;
}

auto ShardOf(const runtime::RunPlan& p, int64_t stage, int64_t tensor_rank) -> model::ShardSpec {
  model::ShardSpec s;
  s.tensor_rank = tensor_rank, s.tensor_size = p.layout.tensor, s.sequence_parallel = p.layout.sequence_parallel;
  s.embedding = false, s.output = false;
  for (const runtime::PlanStage& st : p.stages) {
    if (st.stage != stage) continue;
    s.chunks.push_back({st.first_layer, st.layers});
    s.embedding = s.embedding || st.embedding;
    s.output = s.output || st.output;
  }
  return s;
}

auto CheckRunnable(const runtime::ValidPlan& valid, int world) -> llvm::Expected<RunnablePlan> {
  const runtime::RunPlan& p = *valid;
  if (p.optimizer.kind != runtime::OptimizerKind::AdamW) {
    return Fail(fmt::format("this avf-run trains with AdamW only; the plan asks for {}",
                            runtime::Name(p.optimizer.kind).str()));
  }
  // Training an fp16 plan in another precision would be another run than
  // the plan's (its memory, speed and numerics): refused, never substituted.
  if (p.training.precision == runtime::Precision::Fp16) {
    return Fail(
        "this avf-run trains in fp32 and bf16 mixed precision; the plan asks for fp16, which needs loss scaling "
        "that this runtime does not have: compile the job with `precision = bf16` (same memory, no loss scaling) "
        "or `precision = fp32`");
  }
  if (static_cast<int64_t>(p.ranks.size()) != world) {
    return Fail(
        fmt::format("plan.json has {} ranks but {} {} running", p.ranks.size(), world, world == 1 ? "is" : "are"));
  }
  if (std::optional<std::string> problem = ShareProblem(p)) return Fail(*problem);
  model::ModelConfig c = ModelConfigOf(p);
  for (int64_t stage = 0; stage < p.layout.pipeline; ++stage) {
    int64_t have = model::LayoutOf(c, ShardOf(p, stage, 0)).total;
    int64_t want = p.stage_parameters[static_cast<size_t>(stage)];
    if (have != want) {
      return Fail(fmt::format("plan.json gives stage {} {} parameters per tensor rank, but its layers hold {}", stage,
                              want, have));
    }
  }
  return RunnablePlan(valid, world);
}

}  // namespace avf::parallel
