// What a layout cuts must cut evenly. The pipeline schedule's shape and the
// attention heads are rules of every plan (the compiler keeps them; the
// reader checks them: CheckCuts). The MLP width, the vocabulary and, with
// sequence parallelism, a micro-batch's rows over the tensor group are what
// this runtime needs on top (it pads nothing; Megatron pads the vocabulary):
// parallel::CheckRunnable checks them with the same functions. The schedules
// and the model, which rely on all of them, assert them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "plan/plan.h"
#include "plan/problems.h"

namespace avf::runtime {

// More ops than this per stage is not a training step but a typo (M·V over a
// million); refusing it keeps a bad plan from allocating gigabytes.
inline constexpr int64_t kMaxOpsPerStage = int64_t{1} << 21;

// The pipeline's shape for one optimizer step, as every schedule takes it.
struct PipelineShape {
  PipelineSchedule kind = PipelineSchedule::OneFOneB;
  int64_t stages = 1;         // P
  int64_t micro_batches = 1;  // M
  int64_t chunks = 1;         // V
};

// The plan's shape: chunks are layout.virtual_stages under the interleaved
// schedule and 1 under the others (plan-format.md "stages").
auto ShapeOf(const RunPlan& plan) -> PipelineShape;

// Why no schedule can run `shape`, in one sentence; nullopt when one can.
// Refused: P, M, V < 1; more than kMaxOpsPerStage ops; more than one chunk
// without the interleaved schedule; interleaving one stage; interleaving
// with M not a multiple of P (it runs micro-batches in groups of P).
auto ShapeProblem(const PipelineShape& shape) -> std::optional<std::string>;

// Why `tensor` ranks cannot share the model's `what` (`value` of them)
// equally; nullopt when they can.
auto TensorShareProblem(const char* what, int64_t value, int64_t tensor) -> std::optional<std::string>;

// Why sequence parallelism cannot cut a micro-batch's rows (micro_batch x
// seq_len) into `tensor` equal parts; nullopt when it can.
auto SequenceRowsProblem(int64_t micro_batch, int64_t seq_len, int64_t tensor) -> std::optional<std::string>;

// The plan's schedule shape, and its heads and kv heads over the tensor
// group. Only after CheckExtents (no divisor below 1).
void CheckCuts(const RunPlan& plan, Problems& p);

}  // namespace avf::runtime
