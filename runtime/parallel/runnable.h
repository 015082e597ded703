// What this avf-run can execute, checked once, before any rank connects.
// ValidatePlan (runtime/plan) has already refused every inconsistent plan;
// what is left is what this runtime itself supports: the optimizer (AdamW),
// the MLP width and the vocabulary cut evenly over the tensor group and
// sequence-parallel rows too (it pads nothing), each stage's parameter count
// as this runtime's model lays the stage's layers out (plan.json's
// stage_parameters are the compiler's count), and one process per rank. The engine, the groups and the training loop
// take a RunnablePlan and check nothing of it again.
#pragma once

#include <cstdint>

#include <llvm/Support/Error.h>

#include "model/config.h"
#include "plan/plan.h"

namespace avf::parallel {

class RunnablePlan {
 public:
  auto operator*() const -> const runtime::RunPlan& { return *plan_; }
  auto operator->() const -> const runtime::RunPlan* { return &*plan_; }
  auto valid() const -> const runtime::ValidPlan& { return plan_; }
  auto world() const -> int { return world_; }  // = the plan's ranks

 private:
  friend auto CheckRunnable(const runtime::ValidPlan& plan, int world) -> llvm::Expected<RunnablePlan>;
  RunnablePlan(runtime::ValidPlan plan, int world) : plan_(std::move(plan)), world_(world) {}
  runtime::ValidPlan plan_;
  int world_ = 1;
};

// The plan, to be run by `world` processes; the reason it cannot be otherwise
// (the same on every rank, so that all of them fail alike).
auto CheckRunnable(const runtime::ValidPlan& plan, int world) -> llvm::Expected<RunnablePlan>;

// The plan's model, and what the ranks of pipeline stage `stage` at tensor
// rank `tensor_rank` hold of it.
auto ModelConfigOf(const runtime::RunPlan& plan) -> model::ModelConfig;
auto ShardOf(const runtime::RunPlan& plan, int64_t stage, int64_t tensor_rank) -> model::ShardSpec;

}  // namespace avf::parallel
