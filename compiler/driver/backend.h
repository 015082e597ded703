// The phases after sema: check -> plan -> emit, for `check`, `plan` and
// `emit`. Diagnostics go to the engine; artifacts to `out`.
#pragma once

#include <llvm/Support/raw_ostream.h>

#include "diag/diagnostic.h"
#include "driver/options.h"
#include "sema/value.h"
#include "source/source_set.h"

namespace avf::driver {

struct BackEndResult {
  int usage_error = 0;  // 2 with `message` for a usage error (unknown --job, ...)
  std::string message;
  int run_status = -1;  // `run --local`: the exit status of avf-run, when it ran
};

auto RunBackEnd(const Options& o, const source::SourceSet& sources, const sema::Program& program, unsigned main_buffer,
                diag::DiagnosticEngine& diags, llvm::raw_ostream& out) -> BackEndResult;

}  // namespace avf::driver
