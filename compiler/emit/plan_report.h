// What `aviflowc plan` prints: an aligned table for people, or one JSON
// object per job (JSON Lines) for machines.
#pragma once

#include <llvm/Support/raw_ostream.h>

#include "plan/plan.h"

namespace avf::emit {

// `legend`: what each column means, after the table (`plan --legend`).
void WritePlanTable(const plan::Plan& plan, bool legend, llvm::raw_ostream& out);

// {"job", "layout", "predicted", "alternatives": [{"layout", "predicted"}...], ...}
void WritePlanSummaryJson(const plan::Plan& plan, llvm::raw_ostream& out);

}  // namespace avf::emit
