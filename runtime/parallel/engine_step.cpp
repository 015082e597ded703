// Engine::Step: the schedule's ops, then the reductions and the update;
// Engine::Evaluate: the forwards alone.
#include <algorithm>
#include <cassert>
#include <chrono>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "parallel/typed_engine.h"

namespace avf::parallel {

namespace {

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// Adds the seconds `f` takes to `into`.
template <typename F>
auto Timed(double& into, F f) -> llvm::Error {
  auto start = std::chrono::steady_clock::now();
  llvm::Error e = f();
  into += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return e;
}

}  // namespace

template <typename T>
auto TypedEngine<T>::Receive(int64_t from_stage, T* into) -> llvm::Error {
  comm::Communicator* link = groups_ ? groups_->RecvLink(from_stage) : nullptr;
  assert(link);  // BuildGroups splits a link for every pair the schedule sends over
  auto count = static_cast<size_t>(model_->activation_rows() * model_->config().hidden);
  return Timed(waited_.pipeline, [&] { return link->Recv(into, count, 0); });
}

template <typename T>
auto TypedEngine<T>::Forward(const PipelineOp& op, const std::vector<data::Batch>& batches) -> llvm::Error {
  auto m = static_cast<size_t>(op.micro_batch);
  if (slot_of_[m] < 0) {
    slot_of_[m] = free_slots_.back();
    free_slots_.pop_back();
  }
  int64_t slot = slot_of_[m];
  OpLinks links = Neighbors(op, shape_.stages, stage_, shape_.chunks);
  if (!links.recv_from) model_->SetTokens(slot, batches[m].inputs.data());
  else if (llvm::Error e = Receive(links.recv_from->stage, model_->Input(op.chunk, slot))) return e;
  if (!links.send_to) model_->SetTargets(slot, batches[m].targets.data());
  model_->ForwardChunk(op.chunk, slot);
  if (llvm::Error e = model_->TakeError()) return e;
  if (!window_error_.empty()) return Fail(std::exchange(window_error_, std::string()));
  size_t count = static_cast<size_t>(model_->activation_rows() * model_->config().hidden);
  if (links.send_to) senders_.at(links.send_to->stage)->Send(model_->Output(op.chunk, slot), count);
  else step_loss_ += model_->Loss(slot);
  return llvm::Error::success();
}

template <typename T>
auto TypedEngine<T>::Backward(const PipelineOp& op, size_t index) -> llvm::Error {
  auto m = static_cast<size_t>(op.micro_batch);
  int64_t slot = slot_of_[m];
  OpLinks links = Neighbors(op, shape_.stages, stage_, shape_.chunks);
  if (links.recv_from) {
    if (llvm::Error e = Receive(links.recv_from->stage, model_->OutputGrad())) return e;
  }
  // The chunk's gradients are final after its last micro-batch's backward:
  // reduce each block's as soon as it is done.
  bool last = index == last_backward_[static_cast<size_t>(op.chunk)];
  if (last) model_->SetGradientHook([this](int64_t block) { OnBlockGradients(block); });
  model_->BackwardChunk(op.chunk, slot);
  model_->SetGradientHook(nullptr);
  if (llvm::Error e = model_->TakeError()) return e;
  if (!window_error_.empty()) return Fail(std::exchange(window_error_, std::string()));
  size_t count = static_cast<size_t>(model_->activation_rows() * model_->config().hidden);
  if (links.send_to) senders_.at(links.send_to->stage)->Send(model_->InputGrad(), count);
  if (--backwards_left_[m] == 0) {
    free_slots_.push_back(slot);
    slot_of_[m] = -1;
  }
  return llvm::Error::success();
}

// A tied model split over stages: the first stage's wte gradient and the
// last stage's copy's, summed over the embedding group (no-op elsewhere).
template <typename T>
auto TypedEngine<T>::SumTiedCopies(T* wte) -> llvm::Error {
  comm::Communicator* embedding = groups_ ? groups_->embedding.get() : nullptr;
  if (!embedding) return llvm::Error::success();
  const model::ParamLayout& l = model_->layout();
  auto count = static_cast<size_t>(l.vocab_count * model_->config().hidden);
  return Timed(waited_.data, [&] { return embedding->AllReduce(wte, count, comm::ReduceOp::kSum); });
}

template <typename T>
auto TypedEngine<T>::TakeBlock(int64_t block, const T* window) -> llvm::Error {
  const auto& seg = model_->segments()[static_cast<size_t>(model::Transformer<T>::BlockSegment(block))];
  return Timed(waited_.data, [&] {
    return ScatterToOwners(*k_, window, seg.first, seg.count, optimizer_->slices(), owner_index(), data_group(),
                           grad_slice_.data(), scratch_);
  });
}

// ZeRO 2 and 3, after the schedule: the front and back windows (embeddings,
// head; accumulated over the micro-batches) summed over the embedding group
// where a tied wte is split, then reduce-scattered to their owners.
template <typename T>
auto TypedEngine<T>::FinishSharded() -> llvm::Error {
  if (!window_error_.empty()) return Fail(std::exchange(window_error_, std::string()));
  model_->FinishHeadGradients();
  if (llvm::Error e = model_->TakeError()) return e;
  const model::ParamLayout& l = model_->layout();
  const auto& segments = model_->segments();
  const auto& back = segments.back();
  if (llvm::Error e = SumTiedCopies(l.wte >= 0 ? model_->FrontGradients() + l.wte
                                               : model_->BackGradients() + (l.lm_head - back.first))) {
    return e;
  }
  for (const auto& end :
       {std::pair{segments.front(), model_->FrontGradients()}, std::pair{back, model_->BackGradients()}}) {
    const auto& seg = end.first;
    const T* window = end.second;
    if (seg.count == 0) continue;
    if (llvm::Error e = Timed(waited_.data, [&] {
          return ScatterToOwners(*k_, window, seg.first, seg.count, optimizer_->slices(), owner_index(), data_group(),
                                 grad_slice_.data(), scratch_);
        })) {
      return e;
    }
  }
  return llvm::Error::success();
}

template <typename T>
auto TypedEngine<T>::SquaredNormOfSlice() -> double {
  return k_->SquaredNorm(grad_slice_.data(), RunsWithin(counted_, optimizer_->mine()));
}

// AdamW on this rank's slice; bf16 publishes the updated master into the
// compute copy as it goes, fp32 updates the parameters in place. Below ZeRO
// 3 every owner's slice is then broadcast over the data group.
template <typename T>
auto TypedEngine<T>::Update(double grad_norm) -> llvm::Error {
  const OwnedSlice& mine = optimizer_->mine();
  const T* grads = zero2() ? grad_slice_.data() : model_->gradients().data() + mine.first;
  if (zero3()) {
    optimizer_->Update(*k_, param_slice_.data(), grads, grad_norm, kMixed ? param_copy_.data() : nullptr);
    return llvm::Error::success();
  }
  T* params = model_->parameters().data();
  if constexpr (kMixed) optimizer_->Update(*k_, master_.data(), grads, grad_norm, params + mine.first);
  else optimizer_->Update(*k_, params + mine.first, grads, grad_norm, static_cast<T*>(nullptr));
  return optimizer_->Gather(params, data_group());
}

// bf16 after a restore: the master rounded into the compute copy.
template <typename T>
auto TypedEngine<T>::PublishMaster() -> llvm::Error {
  if constexpr (kMixed) {
    if (zero3()) {
      k_->FromFloat(param_copy_.data(), param_slice_.data(), static_cast<int64_t>(param_slice_.size()));
      return llvm::Error::success();
    }
    T* params = model_->parameters().data();
    k_->FromFloat(params + optimizer_->mine().first, master_.data(), static_cast<int64_t>(master_.size()));
    return optimizer_->Gather(params, data_group());
  } else {
    return llvm::Error::success();
  }
}

template <typename T>
void TypedEngine<T>::OnBlockGradients(int64_t block) {
  model_->FinishBlockGradients(block);
  const model::ParamLayout::Range& r = model_->layout().block_ranges[static_cast<size_t>(block)];
  reducer_->Reduce(model_->gradients().data() + r.first, static_cast<size_t>(r.count));
}

// The gradients outside the blocks (embeddings, final norm, output
// projection): a tied model's two wte copies summed over the embedding
// group first, then everything averaged over the data group.
template <typename T>
auto TypedEngine<T>::ReduceTheRest() -> llvm::Error {
  model_->FinishHeadGradients();
  if (llvm::Error e = model_->TakeError()) return e;
  const model::ParamLayout& l = model_->layout();
  T* g = model_->gradients().data();
  if (llvm::Error e = SumTiedCopies(g + (l.wte >= 0 ? l.wte : l.lm_head))) return e;
  int64_t head = l.block_ranges.empty() ? 0 : l.block_ranges.back().first + l.block_ranges.back().count;
  int64_t body = l.block_ranges.empty() ? l.total : l.block_ranges.front().first;
  reducer_->Reduce(g, static_cast<size_t>(body));
  if (!l.block_ranges.empty()) reducer_->Reduce(g + head, static_cast<size_t>(l.total - head));
  return Timed(waited_.data, [&] { return reducer_->Wait(); });
}

// One world all-reduce: the squared norm's parts, the loss (from the last
// stage's tensor rank 0 of each data rank), the seconds waited, and the stop
// requests as a count per code, so every rank learns the same code.
template <typename T>
auto TypedEngine<T>::SumOverWorld(float* values, size_t count) -> llvm::Error {
  if (!world_ || world_->size() == 1) return llvm::Error::success();
  if (!world_->device_memory()) return world_->AllReduce(values, count, comm::ReduceOp::kSum);
  if (agreed_.size() < count) agreed_ = Buffer<float>(*k_, count);
  k_->CopyFromHost(agreed_.data(), values, count * sizeof(float));
  k_->Synchronize();
  if (llvm::Error e = world_->AllReduce(agreed_.data(), count, comm::ReduceOp::kSum)) return e;
  k_->CopyToHost(values, agreed_.data(), count * sizeof(float));
  return llvm::Error::success();
}

template <typename T>
auto TypedEngine<T>::LossShare(double loss) const -> float {
  bool reports_loss = model_->shard().output && tensor_rank_ == 0;
  return reports_loss ? static_cast<float>(loss / static_cast<double>(plan_->layout.data)) : 0.0f;
}

template <typename T>
auto TypedEngine<T>::Agree(double loss, int stop_signal) -> llvm::Expected<StepResult> {
  const T* g = model_->gradients().data();
  waited_.tensor += model_->TakeTensorCommSeconds();
  constexpr int kStops = 5;
  float shared[kStops + kStopCodes] = {
      static_cast<float>(zero2() ? SquaredNormOfSlice() : k_->SquaredNorm(g, counted_)), LossShare(loss),
      static_cast<float>(waited_.tensor), static_cast<float>(waited_.pipeline), static_cast<float>(waited_.data)};
  if (stop_signal > 0) shared[kStops + std::min(stop_signal, kStopCodes - 1)] = 1.0f;
  int ranks = world_ ? world_->size() : 1;
  if (llvm::Error e = SumOverWorld(shared, std::size(shared))) return e;
  int agreed = 0;
  for (int code = 1; code < kStopCodes; ++code) {
    if (shared[kStops + code] > 0) agreed = code;
  }
  CommSeconds mean{shared[2] / ranks, shared[3] / ranks, shared[4] / ranks};
  return StepResult{shared[1], std::sqrt(static_cast<double>(shared[0])), agreed, mean, {}};
}

template <typename T>
auto TypedEngine<T>::Step(const std::vector<data::Batch>& micro_batches, int stop_signal)
    -> llvm::Expected<StepResult> {
  auto m = static_cast<size_t>(shape_.micro_batches);
  assert(micro_batches.size() == m);
  model_->ZeroGradients();
  grad_slice_.Zero();
  step_loss_ = 0;
  waited_ = {};
  model_->TakeTensorCommSeconds();
  slot_of_.assign(m, -1), backwards_left_.assign(m, shape_.chunks);
  free_slots_.clear();
  for (int64_t s = slots_ - 1; s >= 0; --s) free_slots_.push_back(s);
  if (llvm::Error e = RunSchedule(micro_batches)) return e;
  for (auto& link : senders_) {
    AsyncSender* sender = link.second.get();
    if (llvm::Error e = Timed(waited_.pipeline, [&] { return sender->Flush(); })) return e;
  }
  if (zero2()) {
    if (llvm::Error e = FinishSharded()) return e;
    // The scatters summed over the data group: average, and over the micro-batches.
    k_->Scale(grad_slice_.data(), static_cast<int64_t>(grad_slice_.size()),
              1.0f / static_cast<float>(m * static_cast<size_t>(plan_->layout.data)));
  } else {
    if (llvm::Error e = ReduceTheRest()) return e;
    k_->Scale(model_->gradients().data(), static_cast<int64_t>(model_->gradients().size()),
              1.0f / static_cast<float>(m));
  }
  auto result = Agree(step_loss_ / static_cast<double>(m), stop_signal);
  if (!result) return result.takeError();
  result->own = {waited_.tensor, waited_.pipeline - bubble_, bubble_, waited_.data, 0};
  if (llvm::Error e = Timed(result->own.optimizer, [&] { return Update(result->grad_norm); })) return e;
  return *result;
}

// The step's operations in schedule order; the pipeline waits of the ops
// before this stage's first backward and after its last forward (the ramps,
// where a stage waits for its neighbours' first and last micro-batches)
// count as the bubble.
template <typename T>
auto TypedEngine<T>::RunSchedule(const std::vector<data::Batch>& micro_batches) -> llvm::Error {
  size_t first_backward = ops_.size(), last_forward = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].kind == OpKind::kForward) last_forward = i;
    else first_backward = std::min(first_backward, i);
  }
  bubble_ = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    double before = waited_.pipeline;
    llvm::Error e = ops_[i].kind == OpKind::kForward ? Forward(ops_[i], micro_batches) : Backward(ops_[i], i);
    if (e) return e;
    if (i < first_backward || i > last_forward) bubble_ += waited_.pipeline - before;
  }
  return llvm::Error::success();
}

// Each micro-batch through this stage's chunks, micro-batches in order: every
// stage runs its forwards ordered by (micro-batch, virtual stage), whatever
// the schedule, so the forward each one receives from comes earlier in that
// order and was sent (without blocking) before: no stage waits on one that
// waits on it, and each link's messages are received in sending order. With
// no backward to keep activations for, every micro-batch takes slot 0.
template <typename T>
auto TypedEngine<T>::Evaluate(const std::vector<data::Batch>& micro_batches) -> llvm::Expected<double> {
  assert(!micro_batches.empty());
  size_t m = micro_batches.size();
  step_loss_ = 0;
  slot_of_.assign(m, -1);
  free_slots_.assign(1, 0);
  for (size_t mb = 0; mb < m; ++mb) {
    for (int64_t c = 0; c < shape_.chunks; ++c) {
      if (llvm::Error e = Forward({OpKind::kForward, static_cast<int64_t>(mb), c}, micro_batches)) return e;
    }
    free_slots_.push_back(std::exchange(slot_of_[mb], -1));
  }
  for (auto& link : senders_) {
    if (llvm::Error e = link.second->Flush()) return e;
  }
  float loss = LossShare(step_loss_ / static_cast<double>(m));
  if (llvm::Error e = SumOverWorld(&loss, 1)) return e;
  return loss;
}

template class TypedEngine<float>;
template class TypedEngine<comm::Bf16>;

}  // namespace avf::parallel
