// What the time to train adds to the training steps (docs/planner.md,
// "Outputs"): the stage-in of the dataset to its hot tier before the first
// step, and the time the checkpoints hold training. The copier model is the
// one the manifests run (deploy/lower_storage.cpp, docs/deploy.md, Staging).
#pragma once

#include <cstdint>
#include <optional>

#include "check/job_spec.h"

namespace avf::plan {

// What one copier pod is assumed to sustain; without `staging.copiers` the
// copier count is the tiers' bandwidth over this, at most kMaxDerivedCopiers,
// or kCopiersWithoutBandwidth when neither tier declares a bandwidth.
inline constexpr double kCopierBandwidth = 1e9;
inline constexpr int64_t kMaxDerivedCopiers = 64;
inline constexpr int64_t kCopiersWithoutBandwidth = 8;
// The header of each token shard (docs/data-format.md).
inline constexpr int64_t kShardHeaderBytes = 1024;

// The smaller of the source's `read_bw` and the hot tier's `write_bw` (those
// declared), bytes per second; 0 when neither is declared.
auto StagingBandwidth(const check::DatasetSpec& ds) -> double;

// Copier pods of the stage-in (one per shard range), never more than shards.
auto CopierCount(const check::JobSpec& job, double bandwidth) -> int64_t;

struct StagingTime {
  double bytes = 0;  // every shard with its header
  double rate = 0;   // bytes per second of all copiers together
  double seconds = 0;
};

// nullopt when the dataset is read in place (no `stage_to`).
auto EstimateStaging(const check::JobSpec& job, int64_t nodes) -> std::optional<StagingTime>;

struct CheckpointTime {
  int64_t count = 0;               // checkpoints written, the last step's included
  double bytes = 0;                // of one checkpoint
  std::optional<double> write_bw;  // of the `dir` tier; unknown: not counted
  bool async = false;              // only the last write holds training
  double seconds = 0;
};

// nullopt when the job writes no checkpoints. `training_seconds` (the steps
// alone) places a wall-clock `every`.
auto EstimateCheckpoints(const check::JobSpec& job, int64_t parameters, double training_seconds)
    -> std::optional<CheckpointTime>;

}  // namespace avf::plan
