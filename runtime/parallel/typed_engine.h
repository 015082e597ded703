// The engine (engine.h) on one element type T: float, or bf16 with an fp32
// master copy of the parameters. Internal to runtime/parallel: the trainer
// sees only Engine.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "model/transformer.h"
#include "parallel/async_comm.h"
#include "parallel/engine.h"
#include "parallel/schedule.h"

namespace avf::parallel {

template <typename T>
class TypedEngine final : public Engine {
 public:
  explicit TypedEngine(const EngineSetup& setup);

  auto Step(const std::vector<data::Batch>& micro_batches, int stop_signal) -> llvm::Expected<StepResult> override;
  auto Evaluate(const std::vector<data::Batch>& micro_batches) -> llvm::Expected<double> override;
  auto Memory() -> MemoryUse override;
  auto SaveState() -> OptimizerState override;
  void SaveState(OptimizerState& into) override;
  auto state_runs() const -> StateRuns override;
  auto SumOverWorld(float* values, size_t count) -> llvm::Error override;
  auto RestoreState(const OptimizerState& state) -> llvm::Error override;
  auto optimizer() -> ShardedAdamW& override { return *optimizer_; }
  auto layout() const -> const model::ParamLayout& override { return model_->layout(); }
  auto stage() const -> int64_t override { return stage_; }

 private:
  // bf16: the model computes on a rounded copy of the fp32 master.
  static constexpr bool kMixed = !std::is_same_v<T, float>;
  template <typename E>
  using Buffer = backend::Buffer<E>;

  void Build(const EngineSetup& s);
  // The backend's memory cannot be read by the host: the communicators are
  // wrapped for it (parallel::ForBackend: synced or staged).
  void WrapGroups();
  // The fp32 parameters SaveState and RestoreState move (master_count of them).
  auto master() -> float*;
  auto master_count() const -> int64_t;
  auto InitialSlice(uint64_t seed, const OwnedSlice& slice) -> Buffer<float>;
  void PlanSlots();
  auto RunSchedule(const std::vector<data::Batch>& micro_batches) -> llvm::Error;
  auto Forward(const PipelineOp& op, const std::vector<data::Batch>& batches) -> llvm::Error;
  auto Backward(const PipelineOp& op, size_t index) -> llvm::Error;
  auto Receive(int64_t from_stage, T* into) -> llvm::Error;
  void OnBlockGradients(int64_t block);
  auto ReduceTheRest() -> llvm::Error;
  auto Agree(double loss, int stop_signal) -> llvm::Expected<StepResult>;
  // What this rank adds to the world's sum of a step's mean loss `loss` (the
  // mean over its micro-batches): the last stage's tensor rank 0 of each data
  // rank its share, every other rank 0.
  auto LossShare(double loss) const -> float;
  auto zero2() const -> bool { return zero_ >= 2; }
  auto zero3() const -> bool { return zero_ >= 3; }
  auto data_group() const -> comm::Communicator* { return groups_ ? groups_->data.get() : nullptr; }
  auto owner_index() const -> int64_t { return optimizer_->slices().size() > 1 ? data_rank_ : 0; }
  void UseWindows(uint64_t seed);
  auto TakeBlock(int64_t block, const T* window) -> llvm::Error;
  auto SumTiedCopies(T* wte) -> llvm::Error;
  auto FinishSharded() -> llvm::Error;
  auto Update(double grad_norm) -> llvm::Error;
  // bf16: the updated master slice, rounded into the compute copy (and, with
  // ZeRO 1 and 2, every owner's slice broadcast over the data group).
  auto PublishMaster() -> llvm::Error;
  auto SquaredNormOfSlice() -> double;

  const runtime::RunPlan* plan_ = nullptr;
  comm::Communicator* world_ = nullptr;
  RankGroups* groups_ = nullptr;
  int64_t stage_ = 0, tensor_rank_ = 0, data_rank_ = 0;
  PipelineShape shape_;
  std::vector<PipelineOp> ops_;
  std::vector<size_t> last_backward_;                 // per chunk: the index in ops_ of its last backward
  std::unique_ptr<backend::Kernels<T>> own_kernels_;  // null: the shared CPU backend
  backend::Kernels<T>* k_ = nullptr;
  RankGroups wrapped_groups_;  // groups_ wrapped, when the backend is not host-visible
  std::unique_ptr<model::Transformer<T>> model_;
  std::unique_ptr<ShardedAdamW> optimizer_;
  std::map<int64_t, std::unique_ptr<AsyncSender>> senders_;  // by the stage sent to
  std::unique_ptr<GradientReducer> reducer_;
  // The elements whose squares this rank adds to the whole model's squared
  // gradient norm, so that each distinct parameter counts once: tensors
  // replicated across the tensor group only on tensor rank 0, a tied model's
  // second copy of wte not at all, and (gradients being equal across data
  // ranks, below ZeRO 2) only data rank 0's.
  std::vector<OwnedSlice> counted_;
  // Micro-batch slots: peak distinct micro-batches in flight; per micro-batch
  // its slot (-1: none) and chunk backwards still to run.
  int64_t slots_ = 1;
  std::vector<int64_t> slot_of_, backwards_left_, free_slots_;
  double step_loss_ = 0;
  CommSeconds waited_;  // this rank's, in the step so far
  double bubble_ = 0;   // of waited_.pipeline, the waits in the schedule's ramps
  int64_t zero_ = 0;
  // ZeRO 2 and 3: this rank's slice of the reduced gradients; at 3, its
  // slice of the parameters in fp32 (`param_slice_`, the master in bf16) and,
  // in bf16, that slice rounded (`param_copy_`, what the windows gather).
  // All of them in the backend's memory.
  Buffer<T> grad_slice_, param_copy_;
  Buffer<float> param_slice_;
  // bf16 below ZeRO 3: the fp32 master of the elements this rank updates.
  Buffer<float> master_;
  std::string window_error_;  // the window hooks' first failure
  Buffer<T> scratch_;
  Buffer<float> agreed_;  // Agree's values, where the world takes device memory
};

}  // namespace avf::parallel
