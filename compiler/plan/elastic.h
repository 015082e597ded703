// An elastic job's family of plans: for every node count it may get, the
// layout it trains with there (plan::ElasticFamily).
#pragma once

#include <optional>

#include "diag/diagnostic.h"
#include "plan/plan.h"

namespace avf::plan {

// The family of `plan`, whose job is elastic and whose own layout is
// chosen: W0806 names the counts without a layout, which the family leaves
// out; nullopt after E0807, when only the job's own count has one.
auto PlanElastic(const Plan& plan, diag::DiagnosticEngine& diags) -> std::optional<ElasticFamily>;

}  // namespace avf::plan
