// What one rank serves to Prometheus (runtime/plan_format/metrics.def,
// docs/operations.md): its last step as measured and the plan's prediction
// of the same quantities, every series labelled with the job and the rank's
// place (rank, node, stage and its tensor, data and pipeline coordinates).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "exposition/text_format.h"
#include "parallel/engine.h"
#include "plan/plan.h"
#include "train/metrics.h"

namespace avf::exposition {
class MetricsServer;
}

namespace avf::train {

// What a rank has seen so far; `step.step` is 0 before the first step.
struct RankObservation {
  StepMetrics step;
  parallel::Engine::OwnSeconds own;  // this rank's parts of the last step
  double step_end_unix_s = 0;
  parallel::Engine::MemoryUse memory;
  int64_t memory_peak_bytes = 0;
  int64_t epoch = 0, next_sequence = 0;  // of the next global batch
  bool commits = false;                  // rank 0: it commits the checkpoints
  double checkpoint_commit_unix_s = 0;   // 0: none yet
  double checkpoint_interval_s = 0;      // between the last two; 0 before two
  int64_t restarts = 0;
  int64_t node_count_changes = 0;
  double start_unix_s = 0;
};

auto ExportedFamilies(const runtime::RunPlan& plan, int rank, const RankObservation& o)
    -> std::vector<exposition::Family>;

// A rank's sums over the steps of this run (not of runs before a restart),
// for the table of measured against predicted at the end.
struct RunTotals {
  int64_t steps = 0, checkpoints = 0;
  double step_s = 0, checkpoint_s = 0;
  parallel::Engine::OwnSeconds own;
};

// A rank's observation, published to its metrics server (none: nothing is
// kept) after each step. Committed() may be called from the thread that
// commits asynchronous checkpoints.
class RankExporter {
 public:
  RankExporter(const runtime::RunPlan& plan, int rank, exposition::MetricsServer* server);
  // Before the first step: the step started from, the starts recorded
  // before this one, the resumed checkpoint's commit time (0: none).
  void Started(int64_t step, int64_t restarts, int64_t node_count_changes, double commit_unix_s);
  void Stepped(const StepMetrics& m, const parallel::Engine::OwnSeconds& own, const parallel::Engine::MemoryUse& memory,
               int64_t epoch, int64_t next_sequence);
  void CheckpointStarted(double unix_s);
  void Committed(double unix_s) { committed_unix_s_.store(unix_s); }
  void Publish();
  auto totals() const -> const RunTotals& { return totals_; }

 private:
  const runtime::RunPlan& plan_;
  int rank_;
  exposition::MetricsServer* server_;
  RankObservation observed_;
  RunTotals totals_;
  double last_checkpoint_unix_s_ = 0;
  std::atomic<double> committed_unix_s_{0};
};

auto UnixNow() -> double;

// What a step spent computing: its time less every wait and the optimizer
// (the checkpoint's hold is not in a step's time).
auto ComputeSeconds(double step_s, const parallel::Engine::OwnSeconds& own) -> double;

// The plan's seconds between two checkpoints: `every` as a duration, or
// `every` steps of the predicted step time; 0 when the job does not
// checkpoint at an interval.
auto PredictedCheckpointInterval(const runtime::RunPlan& plan) -> double;

}  // namespace avf::train
