// Hand-made RunPlans for the runtime's parallel tests, laid out as
// docs/plan-format.md says the compiler writes them: rank = t + T·(d + D·p);
// tensor and data groups p outer, pipeline and embedding groups d outer;
// stage s's chunk c holds layer block c·P + s (of equal size, or of the
// sizes `blocks` gives); ZeRO slices ⌊Ψ/D⌋ with the
// remainder on the last data rank; every other section as the validator
// expects it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "plan/plan.h"

namespace avf::testing {

struct PlanShape {
  int64_t tensor = 1, data = 1, pipeline = 1, chunks = 1;
  runtime::PipelineSchedule schedule = runtime::PipelineSchedule::OneFOneB;
  int64_t zero = 0;
  int64_t micro_batch = 1, micro_batches = 1;  // per step and data rank
  bool sequence_parallel = false;
  model::ModelConfig model;  // its tied_embeddings decides the embedding groups
  runtime::Precision precision = runtime::Precision::Fp32;
  // Layers of each chunk in block order c·P + s, for uneven stages; empty:
  // L / (P·C) each.
  std::vector<int64_t> blocks;
};

auto ShapeName(const PlanShape& s) -> std::string;

// A plan that ValidatePlan accepts: hardware of 8 GPUs per node, a data
// slice of 1000 tokens per data rank, job name `made`.
auto MakePlan(const PlanShape& s) -> runtime::RunPlan;

// MakePlan(s) validated; a shape it cannot make valid (a model whose heads
// do not divide by tensor, say) is a mistake in the test: it aborts, saying why.
auto MakeValidPlan(const PlanShape& s) -> runtime::ValidPlan;

// `plan` validated, for tests that edit a made plan first; aborts as above.
auto MustBeValid(runtime::RunPlan plan) -> runtime::ValidPlan;

}  // namespace avf::testing
