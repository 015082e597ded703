// Each rank's starts in the run folder, for avf_restarts_total: one line per
// start ("UNIX_TIME STEP", the step it started from) in
// RUN_DIR/starts/rank_NNNNN, appended by that rank alone, so no rank waits
// on another to count.
#pragma once

#include <cstdint>
#include <string>

#include <llvm/Support/Error.h>

namespace avf::train {

// Appends this start and returns how many were recorded before it.
auto RecordStart(const std::string& run_dir, int rank, int64_t step, double unix_s) -> llvm::Expected<int64_t>;

}  // namespace avf::train
