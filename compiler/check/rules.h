// The job checks of check.cpp, split by what they look at.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "check/job_spec.h"
#include "diag/diagnostic.h"

namespace avf::check {

// What several jobs share is reported once: datasets already checked, and
// dataset/model pairs whose token format was checked.
struct DataChecked {
  // `aviflowc run --local`: every node is a process of this machine, which
  // reaches its `local` tiers.
  bool one_machine = false;
  std::set<std::string> datasets;
  std::set<std::pair<std::string, std::string>> formats;
  std::set<const char*> unreachable;  // source locations already reported by E0718
};

// Token format, hot-tier capacity, dataset size against the training length.
void CheckData(const JobSpec& s, DataChecked& checked, diag::DiagnosticEngine& diags);
// Every location the job uses is reachable from the nodes that run it.
void CheckStorage(const JobSpec& s, DataChecked& checked, diag::DiagnosticEngine& diags);
// The GPU and network numbers the planner divides by.
void CheckHardware(const JobSpec& s, diag::DiagnosticEngine& diags);

}  // namespace avf::check
