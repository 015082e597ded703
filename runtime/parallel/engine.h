// One rank's training steps under any layout the planner emits: the pipeline schedule of its stage over the step's
// micro-batches (schedule.h), activations and gradients sent to and received
// from the neighbouring stages (sends from a thread per link), tensor
// parallelism inside the model (model/transformer.h), each block's gradients
// averaged over the data group as soon as its last micro-batch's backward has
// produced them (overlapping the rest of the backward), a tied embedding's two
// copies summed over the embedding group, the whole model's gradient norm,
// and the optimizer on this rank's ZeRO slice. From ZeRO 2 the rank keeps
// only its slice of the gradients (each block's are reduce-scattered to
// their owners as soon as they are computed, from a window), and at ZeRO 3
// only its slice of the parameters (each segment is gathered into a window
// before it is used, and dropped after).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <llvm/Support/Error.h>

#include "backend/backend.h"
#include "comm/communicator.h"
#include "data/batches.h"
#include "model/config.h"
#include "optim/optimizer.h"
#include "parallel/groups.h"
#include "parallel/runnable.h"
#include "parallel/zero_optimizer.h"
#include "plan/plan.h"

namespace avf::parallel {

// Which of the model's parameters get weight decay (matrices, not norms and
// biases), as sorted runs of the flat buffer, adjacent tensors merged.
auto DecayedRuns(const model::ParamLayout& layout) -> std::vector<optim::ElementRun>;

// Makes the backend a rank computes on, per element type (run/ picks the
// CUDA one on a GPU rank); a null factory: the CPU backend.
struct Backends {
  std::function<std::unique_ptr<backend::Kernels<float>>()> fp32;
  std::function<std::unique_ptr<backend::Kernels<backend::Bf16>>()> bf16;
};

struct EngineSetup {
  const RunnablePlan* plan = nullptr;
  int64_t rank = 0;                     // this process's rank in the plan
  comm::Communicator* world = nullptr;  // null: a one-rank plan
  RankGroups* groups = nullptr;         // null: a one-rank plan
  optim::OptimizerConfig optimizer;
  uint64_t seed = 1234;
  Backends backends;
};

// The engine of one rank, on the element type the plan's precision names:
// fp32, or bf16 mixed precision (bf16 parameters, activations and gradients
// in the model, an fp32 master copy of the parameters that the optimizer
// updates, sharded like its moments; typed_engine.h).
class Engine {
 public:
  virtual ~Engine() = default;
  // The plan was checked once (CheckRunnable) and outlives the engine;
  // `world` and `groups` are its world.size() == plan.world() ranks' (null
  // for a one-rank plan).
  static auto Create(const EngineSetup& setup) -> std::unique_ptr<Engine>;

  // Seconds of one step a rank spent waiting on communication, averaged
  // over the ranks: tensor-parallel collectives; pipeline receives (the
  // bubble included) and the final flush of sends; the data-parallel
  // reduction not hidden behind the backward (and the embedding group's).
  struct CommSeconds {
    double tensor = 0, pipeline = 0, data = 0;
  };
  // The same of this rank alone, with the pipeline waits split: `bubble`
  // is what it waited on its neighbours in the schedule's ramps (before its
  // first backward, after its last forward), `pipeline` the rest; and the
  // seconds of the optimizer's update.
  struct OwnSeconds {
    double tensor = 0, pipeline = 0, bubble = 0, data = 0, optimizer = 0;
  };
  struct StepResult {
    double loss = 0;       // the step's mean loss over every data rank's micro-batches
    double grad_norm = 0;  // of the whole model, before clipping
    int stop_signal = 0;   // 0, or the largest stop code a rank asked for (every rank gets the same)
    CommSeconds comm;
    OwnSeconds own;
  };
  // `micro_batches` are this data rank's (micro_batches_per_step of them,
  // each micro_batch x seq_len); every rank of the data rank passes the same.
  // `stop_signal` is 0, or a code from 1 to kStopCodes - 1 (the signal
  // number this rank was asked to stop on).
  static constexpr int kStopCodes = 32;
  virtual auto Step(const std::vector<data::Batch>& micro_batches, int stop_signal) -> llvm::Expected<StepResult> = 0;
  // The mean loss of `micro_batches` over every data rank, as Step would
  // report it for them now, from forwards alone: no gradient, no update, and
  // nothing a later Step or SaveState reads changes. A collective, between
  // steps: every rank passes its data rank's micro-batches (each micro_batch
  // x seq_len, at least one, as many on every rank); every rank gets the
  // same loss.
  virtual auto Evaluate(const std::vector<data::Batch>& micro_batches) -> llvm::Expected<double> = 0;

  // Bytes this rank holds, in the planner's categories (plan.json
  // predicted.memory_breakdown_bytes): weights and gradients (whole shard or
  // ZeRO slice, in the compute precision), the optimizer's moments and, in
  // bf16, its fp32 master copy; the activations kept for backward over every
  // micro-batch slot; scratch (workspace, windows) is what the planner's
  // `buffers` would hold.
  struct MemoryUse {
    int64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, scratch = 0;
  };
  virtual auto Memory() -> MemoryUse = 0;

  // What a checkpoint keeps of this rank, copied to the host: the fp32
  // parameters (in fp32 what this rank keeps of them: all of its shard, or
  // at ZeRO 3 its slice; in bf16 the master copy of the elements it updates:
  // its ZeRO slice, or the whole shard at ZeRO 0), AdamW's moments of the
  // elements it updates, and the steps taken.
  struct OptimizerState {
    std::vector<float> params, m, v;
    int64_t step = 0;
  };
  virtual auto SaveState() -> OptimizerState = 0;
  // The same into `into`, reusing its vectors' memory (a snapshot taken at
  // every checkpoint touches no new memory after the first).
  virtual void SaveState(OptimizerState& into) = 0;
  // Which elements of this rank's flat parameter buffer (layout()) SaveState's
  // params and moments are.
  struct StateRuns {
    optim::ElementRun params, moments;
  };
  virtual auto state_runs() const -> StateRuns = 0;
  // Puts a state of state_runs()' sizes back, on every rank: it also rebuilds the
  // compute copy (a collective in bf16 with ZeRO 1 and 2, which gathers
  // every owner's slice).
  virtual auto RestoreState(const OptimizerState& state) -> llvm::Error = 0;
  // Sums `values` over every rank of the world, in place (host memory, on
  // any backend); a collective.
  virtual auto SumOverWorld(float* values, size_t count) -> llvm::Error = 0;
  virtual auto optimizer() -> ShardedAdamW& = 0;
  virtual auto layout() const -> const model::ParamLayout& = 0;
  virtual auto stage() const -> int64_t = 0;
};

}  // namespace avf::parallel
