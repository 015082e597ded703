// One rank's side of a training run's checkpoints (docs/checkpoints.md):
// saving its state as chunks of global tensors, committing the step (rank
// 0), and resuming under any layout from the newest committed checkpoint
// that verifies, after checking it belongs to this job and model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "checkpoint/index.h"
#include "crypto/key_file.h"
#include "data/batches.h"
#include "parallel/engine.h"
#include "plan/plan.h"

namespace avf::train {

struct CheckpointContext {
  const runtime::RunPlan* plan = nullptr;
  int64_t rank = 0, world = 1;
  std::string root;         // the checkpoint directory
  std::string plan_sha256;  // of the plan.json being run
  uint64_t seed = 0;        // the parameters' initialisation
  const data::SequenceOrder* order = nullptr;
  int64_t dataset_tokens = 0;
  const crypto::Key* key = nullptr;  // seals the data files (checkpoint { encrypt })
};

// Saves the state after `step` steps; every rank calls it, then (after a
// barrier) rank 0 calls CommitCheckpoint. In two parts for a background
// writer: Snapshot copies the rank's state to host memory, WriteSnapshot
// writes it (no collective, no engine).
struct SavedState;
auto SaveCheckpoint(const CheckpointContext& c, parallel::Engine& engine, int64_t step, SavedState& snapshot)
    -> llvm::Error;
struct SavedState {
  parallel::Engine::OptimizerState state;
  parallel::Engine::StateRuns runs;
  model::ParamLayout layout;
};
// `into`'s memory is reused: keep one SavedState for every checkpoint.
auto Snapshot(const CheckpointContext& c, parallel::Engine& engine, SavedState& into) -> llvm::Error;
auto WriteSnapshot(const CheckpointContext& c, const SavedState& saved, int64_t step) -> llvm::Error;
auto CommitCheckpoint(const CheckpointContext& c, int64_t step) -> llvm::Error;

// Every rank: restores the newest committed checkpoint that is this job's
// and verifies (older ones are tried in turn, rank 0 saying why each newer
// one was passed over); the step resumed from, or nullopt when there is no
// checkpoint. A collective (the ranks share the verification).
auto ResumeLatest(const CheckpointContext& c, parallel::Engine& engine, llvm::raw_ostream& progress)
    -> llvm::Expected<std::optional<int64_t>>;

// What rank `rank` of `plan` holds, without an engine (an offline convert):
// its shard's layout and which of its elements its state's parameters (at
// ZeRO 3 and in bf16 its ZeRO slice, else the whole shard) and moments
// (its ZeRO slice) are; the engine's state_runs() are the same.
struct RankHoldings {
  model::ParamLayout layout;
  parallel::Engine::StateRuns runs;
};
auto HoldingsOf(const runtime::RunPlan& plan, int64_t rank) -> RankHoldings;

// The index's fields that describe the writer, for step `step` of the run
// `c` describes (`files` and `tensors` empty).
auto MetaOf(const CheckpointContext& c, int64_t step) -> checkpoint::Index;

auto SameModel(const model::ModelConfig& a, const model::ModelConfig& b) -> bool;

// Every rank: starts from pretrained weights instead of the initialisation,
// a folder in the transformers layout (config.json, model.safetensors;
// docs/huggingface.md) whose model must be the plan's. The optimizer starts
// fresh (moments zero, step 0).
auto InitFromPretrained(const CheckpointContext& c, parallel::Engine& engine, const std::string& dir,
                        llvm::raw_ostream& progress) -> llvm::Error;

// Why `index` cannot resume this job ("" when it can).
auto MismatchWithJob(const CheckpointContext& c, const checkpoint::Index& index) -> std::string;

}  // namespace avf::train
