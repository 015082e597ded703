// The global batch as a constraint on the layout: a data degree must divide
// it (times a fixed micro-batch), so an awkward batch can rule out the
// fastest layouts, or every layout the fixed fields allow. Both are found by
// searching again at the nearby batches that those data degrees divide
// (docs/planner.md, "The `auto` search").
#pragma once

#include "check/job_spec.h"
#include "diag/diagnostic.h"
#include "plan/plan.h"

namespace avf::plan {

// W0805 when a nearby batch allows a layout that is more than
// kBatchAdviceMargin faster per token than `chosen`, the best layout of the
// job's own batch under its fixed fields.
void AdviseBatch(const check::JobSpec& job, const Candidate& chosen, diag::DiagnosticEngine& diags);

// For E0803: a note naming the batch and a help with the nearest batches that
// admit a layout under the fixed fields, when the batch is what blocks.
void ExplainBlockingBatch(const check::JobSpec& job, diag::DiagnosticBuilder& d);

// A nearby batch must beat the job's by more than this, in step time per
// token, to be suggested: smaller differences are within the model's error.
inline constexpr double kBatchAdviceMargin = 0.05;

}  // namespace avf::plan
