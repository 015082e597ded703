// The table rank 0 prints at the end of a run: what it measured against
// what the plan predicted, step time by part, throughput and MFU, memory by
// category (docs/operations.md). Means over this run's steps on rank 0;
// the planner predicts for the GPU the job declares, so a run on CPUs is
// far from it.
#pragma once

#include <llvm/Support/raw_ostream.h>

#include "plan/plan.h"
#include "train/trainer.h"

namespace avf::run {

void PrintMeasuredAgainstPredicted(llvm::raw_ostream& os, const runtime::RunPlan& plan,
                                   const train::TrainResult& result);

}  // namespace avf::run
