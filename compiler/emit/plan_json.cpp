// TEMPORARY (being written by the plan.json task in this session).
#include "emit/plan_json.h"
#include "emit/plan_report.h"

namespace avf::emit {

void WritePlanJson(const plan::Plan& plan, llvm::raw_ostream& out) { WritePlanSummaryJson(plan, out); }

}  // namespace avf::emit
