// Phase 5: the checked program -> one JobSpec per job, after the checks of
// docs/cli.md (check) that need no layout search: capacity, divisibility of every fixed
// parallel field, data formats and tiers, storage reachability. Checks that
// need the cost model (memory fit, placement) are the planner's.
#pragma once

#include <string_view>
#include <vector>

#include "check/job_spec.h"
#include "diag/diagnostic.h"
#include "sema/value.h"

namespace avf::check {

struct CheckedJob {
  JobSpec spec;
  unsigned buffer_id = 0;  // the file that declares the job
  bool ok = true;          // false: this job has errors and is not planned
};

// `only_job`: check just that job (`plan --job`); empty checks every job.
// `one_machine`: the nodes are processes of this machine (`run --local`),
// which reach its `local` tiers (no E0718).
auto CheckJobs(const sema::Program& program, diag::DiagnosticEngine& diags, std::string_view only_job = {},
               bool one_machine = false) -> std::vector<CheckedJob>;

// "8.4TB", "80GB", "38.7GB": bytes for messages, decimal prefixes (as GPU
// memory is sold), three significant digits.
auto BytesText(double bytes) -> std::string;
// "4.2T", "137K", "512": counts the same way.
auto CountText(double count) -> std::string;

}  // namespace avf::check
