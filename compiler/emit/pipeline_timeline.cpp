#include "emit/pipeline_timeline.h"

#include <algorithm>

namespace avf::emit {

namespace {

// A pass to run: which, on which model chunk, for which micro-batch.
struct Step {
  Pass pass;
  int32_t chunk;
  int64_t micro_batch;
};

// The k-th forward (or backward) pass of a stage under Megatron's
// interleaved schedule: micro-batches in groups of `stages`, each group
// through every chunk in turn (backward: the last chunk first).
auto InterleavedStep(Pass pass, int64_t k, int64_t stages, int64_t chunks) -> Step {
  int64_t group = k / (stages * chunks), in_group = k % (stages * chunks);
  int64_t chunk = in_group / stages;
  if (pass == Pass::Backward) chunk = chunks - 1 - chunk;
  return {pass, static_cast<int32_t>(chunk), group * stages + in_group % stages};
}

// The order in which stage `stage` runs its passes.
auto StageOrder(const cost::Layout& l, int64_t stage, int64_t micro_batches) -> std::vector<Step> {
  int64_t p = l.pipeline;
  std::vector<Step> order;
  if (l.schedule == cost::Schedule::GPipe) {
    for (int64_t i = 0; i < micro_batches; ++i) order.push_back({Pass::Forward, 0, i});
    for (int64_t i = 0; i < micro_batches; ++i) order.push_back({Pass::Backward, 0, i});
    return order;
  }
  int64_t chunks = l.schedule == cost::Schedule::Interleaved ? l.virtual_stages : 1;
  int64_t total = micro_batches * chunks;
  int64_t warmup = chunks > 1 ? (p - stage - 1) * 2 + (chunks - 1) * p : p - stage - 1;
  warmup = std::min(warmup, total);
  auto forward = [&](int64_t k) { return InterleavedStep(Pass::Forward, k, p, chunks); };
  auto backward = [&](int64_t k) { return InterleavedStep(Pass::Backward, k, p, chunks); };
  for (int64_t k = 0; k < warmup; ++k) order.push_back(forward(k));
  for (int64_t k = 0; k < total - warmup; ++k) {
    order.push_back(forward(warmup + k));
    order.push_back(backward(k));
  }
  for (int64_t k = total - warmup; k < total; ++k) order.push_back(backward(k));
  return order;
}

// Compute and communication seconds of one pass through one chunk: the
// chunk's share of the micro-batch, its communication shared between the
// forward and the backward pass as their compute is.
struct PassTimes {
  double compute[2] = {0, 0};  // [Pass]
  double comm[2] = {0, 0};
};

auto PassTimesOf(const cost::MicroBatchTime& mb, int64_t chunks) -> PassTimes {
  double comm = mb.tensor_comm + mb.pipeline_comm + mb.zero3_comm;
  double forward_share = mb.compute > 0 ? mb.forward / mb.compute : 0.5;
  double c = static_cast<double>(chunks);
  PassTimes t;
  t.compute[0] = mb.forward / c;
  t.compute[1] = mb.backward() / c;
  t.comm[0] = comm * forward_share / c;
  t.comm[1] = comm * (1 - forward_share) / c;
  return t;
}

// Plays the stages' orders: a pass starts when its stage is free and the
// pass it needs has ended (the previous chunk's forward, the next chunk's
// backward, or this micro-batch's last forward). False if the orders wait
// on each other, which no schedule above does.
auto Play(const std::vector<std::vector<Step>>& orders, int64_t stages, int64_t chunks, int64_t micro_batches,
          const PassTimes& times, std::vector<std::vector<TimelineOp>>& ops) -> bool {
  int64_t virtual_stages = stages * chunks;
  constexpr double kPending = -1;
  std::vector<double> done[2] = {std::vector<double>(virtual_stages * micro_batches, kPending),
                                 std::vector<double>(virtual_stages * micro_batches, kPending)};
  std::vector<size_t> next(stages, 0);
  std::vector<double> free(stages, 0);
  ops.assign(stages, {});
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < stages; ++s) {
      for (; next[s] < orders[s].size(); ++next[s]) {
        const Step& step = orders[s][next[s]];
        int64_t v = step.chunk * stages + s;  // the pass's virtual stage
        double ready = 0;
        if (step.pass == Pass::Forward && v > 0) ready = done[0][(v - 1) * micro_batches + step.micro_batch];
        if (step.pass == Pass::Backward) {
          ready = v + 1 < virtual_stages ? done[1][(v + 1) * micro_batches + step.micro_batch]
                                         : done[0][v * micro_batches + step.micro_batch];
        }
        if (ready == kPending) break;
        int pass = step.pass == Pass::Forward ? 0 : 1;
        TimelineOp op{step.pass, step.chunk, step.micro_batch, std::max(free[s], ready), 0, 0};
        op.compute_end = op.start + times.compute[pass];
        op.end = op.compute_end + times.comm[pass];
        done[pass][v * micro_batches + step.micro_batch] = op.end;
        free[s] = op.end;
        ops[s].push_back(op);
        progress = true;
      }
    }
  }
  for (int64_t s = 0; s < stages; ++s) {
    if (next[s] < orders[s].size()) return false;
  }
  return true;
}

}  // namespace

auto BuildTimeline(const plan::Plan& plan) -> PipelineTimeline {
  const cost::Layout& l = plan.chosen.layout;
  const cost::Workload& w = plan.job.workload;
  PipelineTimeline t;
  t.stages = std::max<int64_t>(l.pipeline, 1);
  t.chunks = l.schedule == cost::Schedule::Interleaved ? std::max<int64_t>(l.virtual_stages, 1) : 1;
  t.micro_batches = std::max<int64_t>(cost::MicroBatches(w, l), 1);
  t.micro_batch = cost::PredictMicroBatch(w, l, plan.job.hardware);
  const cost::TimeBreakdown& time = plan.chosen.prediction.time;
  t.gradient_sync = std::max(0.0, time.data_comm - static_cast<double>(t.micro_batches) * t.micro_batch.zero3_comm);
  t.optimizer = time.optimizer;
  t.planner_step = plan.chosen.prediction.step_time;
  t.pipeline_end = time.compute + time.tensor_comm + time.pipeline_comm + time.bubble +
                   static_cast<double>(t.micro_batches) * t.micro_batch.zero3_comm;
  if (2 * t.stages * t.chunks * t.micro_batches > kMaxTimelinePasses) return t;
  std::vector<std::vector<Step>> orders;
  for (int64_t s = 0; s < t.stages; ++s) orders.push_back(StageOrder(l, s, t.micro_batches));
  if (!Play(orders, t.stages, t.chunks, t.micro_batches, PassTimesOf(t.micro_batch, t.chunks), t.ops)) {
    t.ops.clear();
    return t;
  }
  t.played = true;
  t.pipeline_end = 0;
  for (const auto& stage : t.ops) {
    if (!stage.empty()) t.pipeline_end = std::max(t.pipeline_end, stage.back().end);
  }
  return t;
}

}  // namespace avf::emit
