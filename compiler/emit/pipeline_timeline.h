// One training step of a plan as a timeline per pipeline stage, for the
// plan's pictures: the layout's schedule (GPipe, 1F1B or Megatron's
// interleaved 1F1B) played with the planner's own per-micro-batch times
// (cost::PredictMicroBatch), then the data-parallel gradient sync and the
// optimizer step of cost::PredictTime. The planner charges every stage the
// busiest stage's work, and so does the timeline; with the schedule's
// dependencies this gives the planner's bubble, and the step ends at the
// planner's step time.
#pragma once

#include <cstdint>
#include <vector>

#include "cost/predict.h"
#include "plan/plan.h"

namespace avf::emit {

enum class Pass : uint8_t { Forward, Backward };

// One forward or backward pass of one micro-batch through one model chunk
// of a stage: compute in [start, compute_end), then the communication the
// planner charges for it in [compute_end, end).
struct TimelineOp {
  Pass pass = Pass::Forward;
  int32_t chunk = 0;
  int64_t micro_batch = 0;
  double start = 0;
  double compute_end = 0;
  double end = 0;
};

struct PipelineTimeline {
  int64_t stages = 1;
  int64_t chunks = 1;  // model chunks per stage
  int64_t micro_batches = 1;
  cost::MicroBatchTime micro_batch;  // the planner's, on the busiest stage
  // Each stage's passes in the order it runs them; empty when the schedule
  // has too many passes to play (`played` false): then the pictures show
  // the planner's terms only.
  std::vector<std::vector<TimelineOp>> ops;
  bool played = false;
  double pipeline_end = 0;   // the last backward pass ends
  double gradient_sync = 0;  // exposed data-parallel sync after the passes
  double optimizer = 0;      // the optimizer step, last
  double planner_step = 0;   // the planner's step time
  double end() const { return pipeline_end + gradient_sync + optimizer; }
};

// At most this many passes are played; more are summarised.
inline constexpr int64_t kMaxTimelinePasses = 400000;

auto BuildTimeline(const plan::Plan& plan) -> PipelineTimeline;

}  // namespace avf::emit
