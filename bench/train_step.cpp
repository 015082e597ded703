#include "train_step.h"

#include <chrono>
#include <cmath>
#include <type_traits>

#include "cpu/kernels.h"
#include "parallel/engine.h"
#include "parallel/zero_optimizer.h"

namespace avf::bench {

namespace {

using Clock = std::chrono::steady_clock;

auto SecondsSince(Clock::time_point since) -> double {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

template <typename T>
constexpr bool kMixed = std::is_same_v<T, backend::Bf16>;

}  // namespace

auto SyntheticBatch(int64_t batch, int64_t seq, int64_t vocab) -> TokenBatch {
  TokenBatch b{batch, seq, std::vector<uint32_t>(static_cast<size_t>(batch * seq)),
               std::vector<uint32_t>(static_cast<size_t>(batch * seq))};
  for (int64_t i = 0; i < batch * seq; ++i) {
    b.tokens[static_cast<size_t>(i)] = static_cast<uint32_t>(i * 7 % vocab);
    b.targets[static_cast<size_t>(i)] = static_cast<uint32_t>(i * 11 % vocab);
  }
  return b;
}

auto BenchOptimizer() -> optim::OptimizerConfig {
  optim::OptimizerConfig c;
  c.lr = 3e-4, c.beta1 = 0.9, c.beta2 = 0.95, c.weight_decay = 0.1, c.clip_norm = 1.0;
  c.schedule = optim::Schedule::Constant;
  return c;
}

template <typename T>
FullStep<T>::FullStep(model::Transformer<T>& model, const optim::OptimizerConfig& config, uint64_t seed)
    : model_(model), adamw_(config, model.layout().total, parallel::DecayedRuns(model.layout())) {
  if constexpr (kMixed<T>) {
    master_.resize(static_cast<size_t>(model.layout().total));
    model.InitialValues(seed, 0, model.layout().total, master_.data());
  }
}

template <typename T>
auto FullStep<T>::ForwardBackward(const TokenBatch& b) -> double {
  model_.ZeroGradients();
  double loss = model_.Forward(b.tokens.data(), b.targets.data(), b.batch, b.seq);
  model_.Backward();
  return loss;
}

template <typename T>
auto FullStep<T>::Update() -> UpdateSeconds {
  UpdateSeconds s;
  const T* grads = model_.gradients().data();
  int64_t total = model_.layout().total;
  // One rank holds every tensor once: each element counts in the norm.
  Clock::time_point t = Clock::now();
  double norm = std::sqrt(optim::SquaredNorm(grads, {{0, total}}));
  s.norm = SecondsSince(t);
  t = Clock::now();
  if constexpr (kMixed<T>) {
    adamw_.Step(master_.data(), grads, norm);
    s.adamw = SecondsSince(t);
    t = Clock::now();
    T* params = model_.parameters().data();
    model_.kernels().FromFloat(params, master_.data(), total);
    s.round = SecondsSince(t);
  } else {
    adamw_.Step(model_.parameters().data(), grads, norm);
    s.adamw = SecondsSince(t);
  }
  return s;
}

template <typename T>
auto FullStep<T>::Run(const TokenBatch& b) -> StepTimes {
  StepTimes s;
  cpu::ResetGemmCounters();
  Clock::time_point t = Clock::now();
  s.loss = ForwardBackward(b);
  s.forward_backward = SecondsSince(t);
  s.update = Update();
  s.gemm_seconds = cpu::GemmSeconds(), s.gemm_flops = cpu::GemmFlops();
  return s;
}

template <typename T>
auto FullStep<T>::OptimizerBytes() const -> int64_t {
  return static_cast<int64_t>(sizeof(float)) * (2 * model_.layout().total + static_cast<int64_t>(master_.size()));
}

template class FullStep<float>;
template class FullStep<backend::Bf16>;

}  // namespace avf::bench
