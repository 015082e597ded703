// One rank's training loop on the CPU backend: the plan's model, data slice,
// optimizer, micro-batches, checkpoints and metrics. Plans with several data
// ranks (tensor = pipeline = 1, ZeRO 0) average the gradients over the data
// group each step; tensor, pipeline and ZeRO execution build on this loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "comm/communicator.h"
#include "crypto/key_file.h"
#include "parallel/engine.h"
#include "parallel/runnable.h"
#include "train/exported_metrics.h"

namespace avf::exposition {
class MetricsServer;
}

namespace avf::train {

struct TrainOptions {
  std::string data_dir;                         // where the shard files are (the staged copy)
  std::string checkpoint_dir;                   // "" : no checkpoints
  std::string plan_sha256;                      // of plan.json, recorded in the checkpoints
  const crypto::Key* checkpoint_key = nullptr;  // seals the checkpoints' data files
  bool resume = false;                          // from the newest committed checkpoint, if any
  std::string init_dir;        // pretrained weights (transformers layout), when no checkpoint is resumed
  std::string validation_dir;  // the shards of the plan's validation dataset
  std::string metrics_path;    // JSON lines, one per step
  std::string run_dir;         // each rank's starts are recorded here (run_starts.h); "": not recorded
  // Where this rank's Prometheus metrics are served (exported_metrics.h); null: not served.
  exposition::MetricsServer* metrics_server = nullptr;
  uint64_t seed = 1234;            // parameter initialisation
  int64_t max_steps = 0;           // stop after this many steps (0: the plan's)
  bool terminal = false;           // redraw one progress line instead of printing lines
  int rank = 0;                    // this process's rank in the plan
  int64_t node_count_changes = 0;  // an elastic job's, as its launchers agreed (avf_node_count_changes_total)
  parallel::Backends backends;     // what the engine computes on (empty: the CPU backend)
  // The ranks of the plan, all data-parallel; null for a single-rank plan.
  comm::Communicator* world = nullptr;
  // Set (by a signal handler) to the signal number to ask for a clean stop:
  // the ranks agree on it at the end of a step, write a checkpoint, and
  // return with `stopped` and the same `stop_signal` everywhere.
  const std::atomic<int>* stop_signal = nullptr;
};

struct TrainResult {
  int64_t first_step = 0;  // 0, or the step resumed from
  int64_t last_step = 0;
  double first_loss = 0, last_loss = 0;
  bool stopped = false;                // a stop signal ended the run before its last step
  int stop_signal = 0;                 // the signal some rank was asked to stop on (the largest)
  bool checkpointed = false;           // the last step wrote a checkpoint (committed after its metrics line)
  int64_t stage = 0;                   // this rank's pipeline stage
  parallel::Engine::MemoryUse memory;  // what this rank held
  RunTotals totals;                    // this rank's sums over the steps of this run
};

// `options.world` is the plan's world (null for a one-rank plan) and
// `options.rank` one of its ranks.
auto Train(const parallel::RunnablePlan& plan, const TrainOptions& options, llvm::raw_ostream& progress)
    -> llvm::Expected<TrainResult>;

}  // namespace avf::train
