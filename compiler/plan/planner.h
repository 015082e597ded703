// Phase 6: a checked job -> its Plan. Runs the `auto` search, reports the
// memory and placement diagnostics of docs/cli.md (check), and builds the plan tables.
#pragma once

#include <optional>
#include <string>

#include "check/check.h"
#include "diag/diagnostic.h"
#include "plan/plan.h"

namespace avf::plan {

struct PlanOptions {
  size_t alternatives = 5;  // how many of the best other layouts to keep
  // Search the whole space for the alternatives and the count of layouts
  // (`plan`); `check` and `emit` skip it unless a diagnostic needs it.
  bool whole_space = true;
  bool tables = true;  // build the rank/group/data tables (plan.json needs them)
};

// nullopt when no layout can run the job (the diagnostics say why).
auto PlanJob(const check::JobSpec& job, const PlanOptions& options, diag::DiagnosticEngine& diags)
    -> std::optional<Plan>;

// Equal predicted step time and memory per GPU, up to rounding: the search
// broke the tie on the layout's fields (a `recompute` or `schedule` that
// changes nothing), so `plan` shows only the first of them.
auto TiedWith(const Candidate& a, const Candidate& b) -> bool;

// `tensor = 8; pipeline = 2`: the fields of `to` that differ from `from`.
auto LayoutDifference(const cost::Layout& from, const cost::Layout& to) -> std::string;

// "tensor 8, pipeline 1, data 16, zero 1, micro-batch 4, recompute none".
auto LayoutSummary(const cost::Layout& l) -> std::string;

}  // namespace avf::plan
