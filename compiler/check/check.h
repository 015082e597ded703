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

// A unit hint for a byte figure `have` (a capacity, a node's memory, written
// at `have_at`) that is less than `need` (written at `need_at`, or computed),
// when a mix-up of decimal and binary prefixes explains it:
//  - `need` is written with a binary prefix (`2TiB`) and the same number with
//    the decimal one (`2TB`) would fit `have`;
//  - else `have` is written with a decimal prefix (`7.3TB`) and the same
//    number with the binary one (`7.3TiB`) would hold `need`: `df -h` and
//    `free -h` print powers of 1024 as `7.3T`, so a figure copied from them is
//    10% short.
// "" when neither holds, or a figure is not a single literal.
auto BytePrefixHint(llvm::SMRange have_at, double have, llvm::SMRange need_at, double need) -> std::string;

}  // namespace avf::check
