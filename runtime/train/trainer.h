// One rank's training loop on the CPU backend: the plan's model, data slice,
// optimizer, micro-batches, checkpoints and metrics. This version executes
// single-rank plans (data = tensor = pipeline = 1); the parallel execution of
// larger plans builds on the same loop.
#pragma once

#include <cstdint>
#include <string>

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "plan/plan.h"

namespace avf::train {

struct TrainOptions {
  std::string data_dir;        // where the shard files are (the staged copy)
  std::string checkpoint_dir;  // "" : no checkpoints
  bool resume = false;         // from the newest committed checkpoint, if any
  std::string metrics_path;    // JSON lines, one per step
  uint64_t seed = 1234;        // parameter initialisation
  int64_t max_steps = 0;       // stop after this many steps (0: the plan's)
  bool terminal = false;       // redraw one progress line instead of printing lines
};

struct TrainResult {
  int64_t first_step = 0;  // 0, or the step resumed from
  int64_t last_step = 0;
  double first_loss = 0, last_loss = 0;
};

auto Train(const runtime::RunPlan& plan, const TrainOptions& options, llvm::raw_ostream& progress)
    -> llvm::Expected<TrainResult>;

}  // namespace avf::train
