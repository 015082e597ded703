// plan.json: the versioned partitioning plan the runtime executes
// (format: docs/plan-format.md; schema: docs/plan.schema.json).
#pragma once

#include <llvm/Support/raw_ostream.h>

#include "plan/plan.h"

namespace avf::emit {

// Deterministic: the same plan gives the same bytes.
void WritePlanJson(const plan::Plan& plan, llvm::raw_ostream& out);

}  // namespace avf::emit
