// The ranks and process groups of a hand-made RunPlan, as
// docs/plan-format.md says the compiler writes them, from the one rank layout
// of plan_format/rank_layout.h (rank = t + T·(d + D·p)),
// ranks filling nodes of `gpus_per_node` in order; tensor and data groups p
// outer, pipeline and embedding groups d outer; an embedding group (first
// and last stage) per (t, d) when the model ties its embeddings and P > 1.
// Shared by the plan-reader tests and the parallel tests' plan builder.
#pragma once

#include <cstdint>

#include "plan/plan.h"

namespace avf::testing {

void AddRanksAndGroups(runtime::RunPlan& p, int64_t tensor, int64_t data, int64_t pipeline, int64_t gpus_per_node,
                       bool tied);

}  // namespace avf::testing
