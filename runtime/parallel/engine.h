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
#include <map>
#include <memory>
#include <vector>

#include <llvm/Support/Error.h>

#include "comm/communicator.h"
#include "data/batches.h"
#include "model/transformer.h"
#include "optim/optimizer.h"
#include "parallel/async_comm.h"
#include "parallel/groups.h"
#include "parallel/runnable.h"
#include "parallel/schedule.h"
#include "parallel/zero_optimizer.h"
#include "plan/plan.h"

namespace avf::parallel {

// Which of the model's parameters get weight decay (matrices, not norms and
// biases), as the trainer and the engine both need it.
auto DecayMask(const model::ParamLayout& layout) -> std::vector<bool>;

struct EngineSetup {
  const RunnablePlan* plan = nullptr;
  int64_t rank = 0;                     // this process's rank in the plan
  comm::Communicator* world = nullptr;  // null: a one-rank plan
  RankGroups* groups = nullptr;         // null: a one-rank plan
  optim::OptimizerConfig optimizer;
  uint64_t seed = 1234;
};

class Engine {
 public:
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
  struct StepResult {
    double loss = 0;       // the step's mean loss over every data rank's micro-batches
    double grad_norm = 0;  // of the whole model, before clipping
    int stop_signal = 0;   // 0, or the largest stop code a rank asked for (every rank gets the same)
    CommSeconds comm;
  };
  // `micro_batches` are this data rank's (micro_batches_per_step of them,
  // each micro_batch x seq_len); every rank of the data rank passes the same.
  // `stop_signal` is 0, or a code from 1 to kStopCodes - 1 (the signal
  // number this rank was asked to stop on).
  static constexpr int kStopCodes = 32;
  auto Step(const std::vector<data::Batch>& micro_batches, int stop_signal) -> llvm::Expected<StepResult>;

  // Bytes this rank holds, in the planner's categories (plan.json
  // predicted.memory_breakdown_bytes): weights and gradients (whole shard or
  // ZeRO slice), the optimizer's moments, the activations kept for backward
  // over every micro-batch slot; scratch (workspace, windows) is what the
  // planner's `buffers` would hold.
  struct MemoryUse {
    int64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, scratch = 0;
  };
  auto Memory() -> MemoryUse;

  auto model() -> model::Transformer<float>& { return *model_; }
  // What this rank keeps of the parameters (all of its shard, or at ZeRO 3
  // its slice): what a checkpoint saves and restores.
  auto kept_parameters() -> float* { return zero3() ? param_slice_.data() : model_->parameters().data(); }
  auto kept_parameter_count() const -> int64_t {
    return zero3() ? static_cast<int64_t>(param_slice_.size()) : model_->layout().total;
  }
  auto optimizer() -> ShardedAdamW& { return *optimizer_; }
  auto stage() const -> int64_t { return stage_; }

 private:
  Engine() = default;
  void Build(const EngineSetup& s);
  void PlanSlots();
  auto Forward(const PipelineOp& op, const std::vector<data::Batch>& batches) -> llvm::Error;
  auto Backward(const PipelineOp& op, size_t index) -> llvm::Error;
  auto Receive(int64_t from_stage, float* into) -> llvm::Error;
  void OnBlockGradients(int64_t block);
  auto ReduceTheRest() -> llvm::Error;
  auto Agree(double loss, int stop_signal) -> llvm::Expected<StepResult>;
  auto zero2() const -> bool { return zero_ >= 2; }
  auto zero3() const -> bool { return zero_ >= 3; }
  void UseWindows(uint64_t seed);
  auto TakeBlock(int64_t block, const float* window) -> llvm::Error;
  auto SumTiedCopies(float* wte) -> llvm::Error;
  auto FinishSharded() -> llvm::Error;
  auto Update(double grad_norm) -> llvm::Error;
  auto SquaredNormOfSlice() const -> double;

  const runtime::RunPlan* plan_ = nullptr;
  comm::Communicator* world_ = nullptr;
  RankGroups* groups_ = nullptr;
  int64_t stage_ = 0, tensor_rank_ = 0, data_rank_ = 0;
  PipelineShape shape_;
  std::vector<PipelineOp> ops_;
  std::vector<size_t> last_backward_;  // per chunk: the index in ops_ of its last backward
  std::unique_ptr<model::Transformer<float>> model_;
  std::unique_ptr<ShardedAdamW> optimizer_;
  std::map<int64_t, std::unique_ptr<AsyncSender>> senders_;  // by the stage sent to
  std::unique_ptr<GradientReducer> reducer_;
  std::vector<OwnedSlice> counted_;  // the elements this rank adds to the squared norm
  // Micro-batch slots: peak distinct micro-batches in flight; per micro-batch
  // its slot (-1: none) and chunk backwards still to run.
  int64_t slots_ = 1;
  std::vector<int64_t> slot_of_, backwards_left_, free_slots_;
  double step_loss_ = 0;
  CommSeconds waited_;  // this rank's, in the step so far
  int64_t zero_ = 0;
  // ZeRO 2 and 3: this rank's slice of the reduced gradients (and of the
  // parameters at 3); the window hooks' first failure; reused scratch.
  std::vector<float> grad_slice_, param_slice_;
  std::string window_error_;
  std::vector<float> scratch_;
};

}  // namespace avf::parallel
