// Hand-made RunPlans for the runtime's parallel tests, laid out as
// docs/plan-format.md says the compiler writes them: rank = t + T·(d + D·p);
// tensor and data groups p outer, pipeline and embedding groups d outer;
// stage s's chunk c holds layer block c·P + s; ZeRO slices ⌊Ψ/D⌋ with the
// remainder on the last data rank.
#pragma once

#include <cstdint>
#include <string>

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
};

auto ShapeName(const PlanShape& s) -> std::string;

auto MakePlan(const PlanShape& s) -> runtime::RunPlan;

}  // namespace avf::testing
