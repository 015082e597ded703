// Reading one job out of the checked program (no diagnostics: sema has
// already reported everything that would make the numbers meaningless).
#pragma once

#include "check/job_spec.h"
#include "sema/value.h"

namespace avf::check {

auto ExtractJob(const sema::Program& program, const sema::Decl& job) -> JobSpec;

}  // namespace avf::check
