// What each rank held, next to what the planner predicted: every rank writes
// RUN_DIR/memory_rank_NNNNN.json at the end of a run, and rank 0 prints a
// line (docs/cli.md, "run"). The planner predicts for the GPU the job
// declares; the categories are the same (plan.json
// predicted.memory_breakdown_bytes).
#pragma once

#include <string>

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "plan/plan.h"
#include "train/trainer.h"

namespace avf::run {

auto WriteMemoryReport(const std::string& run_dir, int64_t rank, const runtime::RunPlan& plan,
                       const train::TrainResult& result) -> llvm::Error;

// "104 KB", "1.49 GB": bytes in decimal units, three digits.
auto ByteSize(double bytes) -> std::string;

// "memory of rank 0 (stage 0): weights 104 KB, ... ; planner: weights ..."
void PrintMemory(llvm::raw_ostream& os, int64_t rank, const runtime::RunPlan& plan, const train::TrainResult& result);

}  // namespace avf::run
