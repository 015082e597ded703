// `avf-run check-plan FILE`: everything ReadPlanFile checks, and what a run
// does not need but a plan must still satisfy: no key that
// plan_format/keys.def does not define (the reader itself ignores unknown
// keys, for forward compatibility), and the predicted totals against their
// parts (they inform people, so a run does not refuse them).
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "plan/plan.h"

namespace avf::runtime {

// The plan at `path` ("-": standard input), read and checked strictly.
auto CheckPlanFile(llvm::StringRef path) -> llvm::Expected<ValidPlan>;

// The same over text already read; `name` prefixes every message.
auto CheckPlanText(llvm::StringRef text, llvm::StringRef name) -> llvm::Expected<ValidPlan>;

// The rank, group, data-slice and ZeRO-slice tables as JSON under their
// plan.json key paths ({"ranks": [...], "groups": {...}, "data": {"slices":
// [...]}, "zero": {"slices": [...]}}): listed by a version-2 plan, derived
// from a later one's layout.
void PrintTables(const RunPlan& plan, llvm::raw_ostream& out);

// Only the predicted totals (hardware, training and predicted sections).
auto CheckPredicted(const RunPlan& plan, llvm::StringRef name = "plan.json") -> llvm::Error;

}  // namespace avf::runtime
