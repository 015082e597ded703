#include "plan/cuts.h"

#include <fmt/format.h>

namespace avf::runtime {

namespace {

auto CountProblem(const PipelineShape& s) -> std::optional<std::string> {
  if (s.stages < 1) return fmt::format("a pipeline needs at least 1 stage, not {}", s.stages);
  if (s.micro_batches < 1) return fmt::format("a step needs at least 1 micro-batch, not {}", s.micro_batches);
  if (s.chunks < 1) return fmt::format("a stage needs at least 1 model chunk, not {}", s.chunks);
  // Each bound alone keeps the products the schedules take (P·V, 2·M·V) far from overflow.
  if (s.stages > kMaxOpsPerStage || s.micro_batches > kMaxOpsPerStage || s.chunks > kMaxOpsPerStage ||
      s.micro_batches * s.chunks > kMaxOpsPerStage / 2) {
    return fmt::format(
        "{} stages, {} micro-batches and {} chunks per stage exceed what a schedule may hold ({} ops "
        "per stage)",
        s.stages, s.micro_batches, s.chunks, kMaxOpsPerStage);
  }
  return std::nullopt;
}

}  // namespace

auto ShapeOf(const RunPlan& plan) -> PipelineShape {
  const PlanLayout& l = plan.layout;
  int64_t chunks = l.schedule == PipelineSchedule::Interleaved ? l.virtual_stages : 1;
  return {l.schedule, l.pipeline, plan.training.micro_batches_per_step, chunks};
}

auto ShapeProblem(const PipelineShape& s) -> std::optional<std::string> {
  if (std::optional<std::string> counts = CountProblem(s)) return counts;
  if (s.chunks > 1 && s.kind != PipelineSchedule::Interleaved) {
    return fmt::format("{} model chunks per stage need the interleaved schedule; {} runs one chunk per stage", s.chunks,
                       Name(s.kind).str());
  }
  if (s.chunks == 1) return std::nullopt;  // interleaved with one chunk is 1F1B
  if (s.stages == 1) {
    return fmt::format("the interleaved schedule with {} model chunks needs more than one pipeline stage", s.chunks);
  }
  if (s.micro_batches % s.stages != 0) {
    return fmt::format(
        "the interleaved schedule needs the micro-batches per step to be a multiple of the pipeline "
        "stages (it runs them in groups of P), but M = {} and P = {}",
        s.micro_batches, s.stages);
  }
  return std::nullopt;
}

auto TensorShareProblem(const char* what, int64_t value, int64_t tensor) -> std::optional<std::string> {
  if (tensor >= 1 && value % tensor == 0) return std::nullopt;
  return fmt::format(
      "the model's {} = {} does not divide by tensor = {}: each tensor rank needs an equal share "
      "(choose a {} that is a multiple of {})",
      what, value, tensor, what, tensor);
}

auto SequenceRowsProblem(int64_t micro_batch, int64_t seq_len, int64_t tensor) -> std::optional<std::string> {
  int64_t rows = 0;
  if (tensor >= 1 && !MulOverflows(micro_batch, seq_len, &rows) && rows % tensor == 0) return std::nullopt;
  return fmt::format(
      "sequence parallelism cuts a micro-batch's rows (micro_batch x seq_len = {} x {}) into "
      "tensor = {} equal parts; they do not divide",
      micro_batch, seq_len, tensor);
}

void CheckCuts(const RunPlan& plan, Problems& p) {
  if (std::optional<std::string> shape = ShapeProblem(ShapeOf(plan))) p.Add("layout", *shape);
  const PlanModel& m = plan.model;
  int64_t T = plan.layout.tensor;
  if (std::optional<std::string> heads = TensorShareProblem("heads", m.heads, T)) p.Add("model.heads", *heads);
  if (std::optional<std::string> kv = TensorShareProblem("kv_heads", m.kv_heads, T)) p.Add("model.kv_heads", *kv);
}

}  // namespace avf::runtime
