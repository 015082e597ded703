#include "parallel/engine.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "cpu/cpu_backend.h"
#include "parallel/staged_communicator.h"
#include "parallel/typed_engine.h"

namespace avf::parallel {

namespace {

// A tensor every tensor rank holds whole (norms, row-parallel biases, wpe).
auto Replicated(const model::ParamTensor& t) -> bool {
  int64_t rows = 0;
  for (const model::TensorPart::Rows& r : t.part.row_blocks) rows += r.count;
  return rows == t.part.rows && t.part.col_count == t.part.cols;
}

}  // namespace

auto DecayedRuns(const model::ParamLayout& l) -> std::vector<optim::ElementRun> {
  std::vector<optim::ElementRun> runs;
  for (const model::ParamTensor& t : l.tensors) {
    bool vector = t.name.find("ln_") != std::string::npos || t.name.find(".bias") != std::string::npos;
    if (!vector && t.size > 0) runs.push_back({t.offset, t.size});
  }
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<optim::ElementRun> merged;
  for (const optim::ElementRun& r : runs) {
    if (!merged.empty() && merged.back().first + merged.back().count == r.first) {
      merged.back().count += r.count;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

auto Engine::Create(const EngineSetup& setup) -> std::unique_ptr<Engine> {
  if ((*setup.plan)->training.precision == runtime::Precision::Bf16) {
    return std::make_unique<TypedEngine<comm::Bf16>>(setup);
  }
  return std::make_unique<TypedEngine<float>>(setup);
}

template <typename T>
TypedEngine<T>::TypedEngine(const EngineSetup& setup) {
  Build(setup);
}

template <typename T>
void TypedEngine<T>::Build(const EngineSetup& s) {
  const runtime::RunPlan& p = **s.plan;
  assert(s.rank >= 0 && s.rank < s.plan->world() && (s.world ? s.world->size() : 1) == s.plan->world());
  plan_ = &p, world_ = s.world, groups_ = s.groups;
  const runtime::PlanRank& me = p.ranks[static_cast<size_t>(s.rank)];
  stage_ = me.pipeline, tensor_rank_ = me.tensor, data_rank_ = me.data;
  shape_ = runtime::ShapeOf(p);
  ops_ = StageSchedule(shape_, stage_);
  last_backward_.assign(static_cast<size_t>(shape_.chunks), 0);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].kind == OpKind::kBackward) last_backward_[static_cast<size_t>(ops_[i].chunk)] = i;
  }
  if constexpr (kMixed) {
    if (s.backends.bf16) own_kernels_ = s.backends.bf16();
  } else {
    if (s.backends.fp32) own_kernels_ = s.backends.fp32();
  }
  k_ = own_kernels_ ? own_kernels_.get() : &cpu::Backend<T>();
  if (groups_ && !k_->host_visible()) WrapGroups();
  comm::Communicator* tensor = groups_ ? groups_->tensor.get() : nullptr;
  model_ = std::make_unique<model::Transformer<T>>(ModelConfigOf(p), ShardOf(p, stage_, tensor_rank_), *k_, tensor);
  zero_ = p.layout.zero;
  const model::ParamLayout& l = model_->layout();
  std::vector<OwnedSlice> slices{{0, l.total}};
  if (p.layout.zero >= 1 && p.layout.data > 1) {
    slices.clear();
    for (const runtime::ZeroSlice& z : p.zero.slices) {
      if (z.stage == stage_) slices.push_back({z.first, z.count});
    }
  }
  optimizer_ =
      std::make_unique<ShardedAdamW>(*k_, s.optimizer, slices, slices.size() > 1 ? data_rank_ : 0, DecayedRuns(l));
  if (zero2()) UseWindows(s.seed);
  model_->Initialize(s.seed);
  if (kMixed && !zero3()) {
    master_ = InitialSlice(s.seed, optimizer_->mine());
  }
  PlanSlots();
  model_->Reserve(p.layout.micro_batch, p.model.seq_len, slots_);
  reducer_ = std::make_unique<GradientReducer>(groups_ ? groups_->data.get() : nullptr);
  for (const PipelineOp& op : ops_) {
    OpLinks links = Neighbors(op, shape_.stages, stage_, shape_.chunks);
    if (links.send_to && !senders_.count(links.send_to->stage)) {
      // The sender copies each message itself, so it takes the unwrapped link.
      comm::Communicator* link = s.groups ? s.groups->SendLink(links.send_to->stage) : nullptr;
      assert(link);  // BuildGroups splits a link for every pair the schedule sends over
      senders_[links.send_to->stage] =
          std::make_unique<AsyncSender>(link, 1, k_->host_visible() ? nullptr : static_cast<backend::Memory*>(k_));
    }
  }
  // With the gradients sharded every data rank counts its own slice;
  // otherwise they are equal on every data rank and data rank 0 counts them.
  if (data_rank_ == 0 || zero2()) {
    bool tied_copy = p.model.tied_embeddings && shape_.stages > 1 && !model_->shard().embedding;
    for (const model::ParamTensor& t : l.tensors) {
      if ((Replicated(t) && tensor_rank_ != 0) || (tied_copy && t.offset == l.lm_head)) continue;
      counted_.push_back({t.offset, t.size});
    }
  }
}

// ZeRO 2 and 3: the model computes each segment in a window; the hooks move
// it between the owners. A failure is kept until the step ends.
template <typename T>
void TypedEngine<T>::UseWindows(uint64_t seed) {
  const OwnedSlice& mine = optimizer_->mine();
  grad_slice_ = Buffer<T>(*k_, static_cast<size_t>(mine.count));
  typename model::Transformer<T>::Windows w;
  w.parameters = zero3();
  w.take = [this](int64_t block, T* window) {
    if (!window_error_.empty()) return;
    if (llvm::Error e = TakeBlock(block, window)) window_error_ = llvm::toString(std::move(e));
  };
  if (zero3()) {
    param_slice_ = InitialSlice(seed, mine);
    if constexpr (kMixed) {
      param_copy_ = Buffer<T>(*k_, param_slice_.size());
      k_->FromFloat(param_copy_.data(), param_slice_.data(), mine.count);
    }
    w.fill = [this](int64_t segment, T* window) {
      if (!window_error_.empty()) return;
      const auto& seg = model_->segments()[static_cast<size_t>(segment)];
      const T* owned = nullptr;
      if constexpr (kMixed) owned = param_copy_.data();
      else owned = param_slice_.data();
      if (llvm::Error e = GatherFromOwners(*k_, window, seg.first, seg.count, optimizer_->slices(), owner_index(),
                                           data_group(), owned, scratch_)) {
        window_error_ = llvm::toString(std::move(e));
      }
    };
  }
  model_->UseWindows(std::move(w));
}

// The planner counts the fp32 master of 16-bit training with the optimizer.
template <typename T>
auto TypedEngine<T>::Memory() -> MemoryUse {
  typename model::Transformer<T>::MemoryBytes m = model_->Memory();
  auto bytes = [](const auto& v) { return static_cast<int64_t>(v.size() * sizeof(*v.data())); };
  MemoryUse u;
  u.weights = m.parameters + (kMixed ? bytes(param_copy_) : bytes(param_slice_));
  u.gradients = m.gradients + bytes(grad_slice_);
  u.optimizer = bytes(optimizer_->m()) + bytes(optimizer_->v());
  if (kMixed) u.optimizer += bytes(master_) + bytes(param_slice_);
  u.activations = m.activations;
  u.scratch = m.scratch + bytes(scratch_);
  return u;
}

template <typename T>
auto TypedEngine<T>::master() -> float* {
  if (zero3()) return param_slice_.data();
  if constexpr (kMixed) return master_.data();
  else return model_->parameters().data();
}

template <typename T>
auto TypedEngine<T>::master_count() const -> int64_t {
  if (zero3()) return static_cast<int64_t>(param_slice_.size());
  return kMixed ? static_cast<int64_t>(master_.size()) : model_->layout().total;
}

template <typename T>
auto TypedEngine<T>::state_runs() const -> StateRuns {
  const OwnedSlice& mine = optimizer_->mine();
  bool whole = master_count() == model_->layout().total;
  return {{whole ? 0 : mine.first, master_count()}, mine};
}

template <typename T>
void TypedEngine<T>::SaveState(OptimizerState& s) {
  StateRuns runs = state_runs();
  s.params.resize(static_cast<size_t>(runs.params.count));
  s.m.resize(static_cast<size_t>(runs.moments.count)), s.v.resize(static_cast<size_t>(runs.moments.count));
  s.step = optimizer_->step();
  k_->CopyToHost(s.params.data(), master(), s.params.size() * sizeof(float));
  k_->CopyToHost(s.m.data(), optimizer_->m().data(), s.m.size() * sizeof(float));
  k_->CopyToHost(s.v.data(), optimizer_->v().data(), s.v.size() * sizeof(float));
}

template <typename T>
auto TypedEngine<T>::SaveState() -> OptimizerState {
  OptimizerState s;
  SaveState(s);
  return s;
}

template <typename T>
auto TypedEngine<T>::RestoreState(const OptimizerState& s) -> llvm::Error {
  StateRuns runs = state_runs();
  int64_t params = runs.params.count, moments = runs.moments.count;
  assert(static_cast<int64_t>(s.params.size()) == params && static_cast<int64_t>(s.m.size()) == moments &&
         s.v.size() == s.m.size());
  k_->CopyFromHost(master(), s.params.data(), static_cast<size_t>(params) * sizeof(float));
  k_->CopyFromHost(optimizer_->m().data(), s.m.data(), static_cast<size_t>(moments) * sizeof(float));
  k_->CopyFromHost(optimizer_->v().data(), s.v.data(), static_cast<size_t>(moments) * sizeof(float));
  optimizer_->set_step(s.step);
  if constexpr (kMixed) return PublishMaster();
  else return llvm::Error::success();
}

// The fp32 values of elements `slice` of the flat buffer after Initialize,
// in the backend's memory.
template <typename T>
auto TypedEngine<T>::InitialSlice(uint64_t seed, const OwnedSlice& slice) -> Buffer<float> {
  std::vector<float> host(static_cast<size_t>(slice.count));
  model_->InitialValues(seed, slice.first, slice.count, host.data());
  Buffer<float> values(*k_, host.size());
  k_->CopyFromHost(values.data(), host.data(), host.size() * sizeof(float));
  return values;
}

// Each group wrapped for the backend's memory (ForBackend); the wrapped
// groups take the originals' place.
template <typename T>
void TypedEngine<T>::WrapGroups() {
  auto wrapped = [&](const std::unique_ptr<comm::Communicator>& c) -> std::unique_ptr<comm::Communicator> {
    return c ? ForBackend(*c, *k_) : nullptr;
  };
  wrapped_groups_.world_rank = groups_->world_rank;
  wrapped_groups_.coords = groups_->coords;
  wrapped_groups_.stages = groups_->stages;
  wrapped_groups_.tensor = wrapped(groups_->tensor), wrapped_groups_.data = wrapped(groups_->data);
  wrapped_groups_.pipeline = wrapped(groups_->pipeline), wrapped_groups_.embedding = wrapped(groups_->embedding);
  for (const auto& [link, c] : groups_->links) wrapped_groups_.links[link] = wrapped(c);
  groups_ = &wrapped_groups_;
}

// The most distinct micro-batches whose backwards are not all done at once.
template <typename T>
void TypedEngine<T>::PlanSlots() {
  std::set<int64_t> active;
  std::vector<int64_t> left(static_cast<size_t>(shape_.micro_batches), shape_.chunks);
  size_t peak = 1;
  for (const PipelineOp& op : ops_) {
    if (op.kind == OpKind::kForward) active.insert(op.micro_batch);
    else if (--left[static_cast<size_t>(op.micro_batch)] == 0) active.erase(op.micro_batch);
    peak = std::max(peak, active.size());
  }
  slots_ = static_cast<int64_t>(peak);
}

template class TypedEngine<float>;
template class TypedEngine<comm::Bf16>;

}  // namespace avf::parallel
