// An elastic plan on another node count than its own: the plan with the
// layout, stages and prediction of that count's entry in `elastic`, and the
// tables derived from them as the reader derives the plan's own.
#pragma once

#include <cstdint>
#include <string>

#include <llvm/Support/Error.h>

#include "plan/plan.h"

namespace avf::runtime {

// The counts `plan` may train on: "1, 2 or 4" (its own alone when it is not elastic).
auto NodeCountsText(const RunPlan& plan) -> std::string;

// `plan` on `nodes` nodes: itself at its own count, else its family's entry
// for that count, validated as any plan is; an error naming the counts the
// plan has when it has no entry for `nodes`.
auto AtNodeCount(const ValidPlan& plan, int64_t nodes) -> llvm::Expected<ValidPlan>;

}  // namespace avf::runtime
