#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>

#include "numeric/bf16.h"

namespace avf::optim {

auto LearningRate(const OptimizerConfig& c, int64_t step) -> double {
  if (c.warmup > 0 && step < c.warmup) return c.lr * static_cast<double>(step + 1) / static_cast<double>(c.warmup);
  if (c.schedule == Schedule::Constant) return c.lr;
  int64_t span = std::max<int64_t>(1, c.total_steps - c.warmup - 1);
  double progress = std::clamp(static_cast<double>(step - c.warmup) / static_cast<double>(span), 0.0, 1.0);
  double min_lr = c.lr * c.min_lr_ratio;
  if (c.schedule == Schedule::Linear) return c.lr - (c.lr - min_lr) * progress;
  return min_lr + 0.5 * (c.lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

auto GlobalNorm(const float* grads, int64_t n) -> double {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(grads[i]) * grads[i];
  return std::sqrt(sum);
}

auto ScalarsOf(const OptimizerConfig& c, int64_t step, double grad_norm) -> UpdateScalars {
  double clip = c.clip_norm > 0 && grad_norm > c.clip_norm ? c.clip_norm / grad_norm : 1.0;
  auto t = static_cast<double>(step + 1);
  return {LearningRate(c, step), clip, 1.0 - std::pow(c.beta1, t), 1.0 - std::pow(c.beta2, t)};
}

namespace {

auto Widened(float g) -> double { return g; }
auto Widened(numeric::Bf16 g) -> double { return numeric::ToFloat(g); }

}  // namespace

// Elements per thread task; the update is element-wise, so results do not
// depend on how the blocks are shared out. Below kParallelMin elements one
// thread does it all: starting the team would cost more.
constexpr int64_t kBlock = 1 << 13, kParallelMin = 1 << 20;

template <typename G>
void AdamW::Step(float* params, const G* grads, const std::vector<bool>& decay, double grad_norm) {
  const UpdateScalars u = ScalarsOf(config_, step_, grad_norm);
  ++step_;
  const double b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps, wd = config_.weight_decay;
  const auto n = static_cast<int64_t>(m_.size());
  float* m_all = m_.data();
  float* v_all = v_.data();
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t first = 0; first < n; first += kBlock) {
    int64_t end = std::min(n, first + kBlock);
    // vector<bool>'s bits, read once per block, out of the update's loop.
    double decays[kBlock];
    for (int64_t i = first; i < end; ++i) decays[i - first] = decay.empty() || decay[static_cast<size_t>(i)] ? wd : 0.0;
    for (int64_t i = first; i < end; ++i) {
      double g = Widened(grads[i]) * u.clip;
      double m = b1 * m_all[i] + (1.0 - b1) * g;
      double v = b2 * v_all[i] + (1.0 - b2) * g * g;
      m_all[i] = static_cast<float>(m);
      v_all[i] = static_cast<float>(v);
      double update = (m / u.bias_correction1) / (std::sqrt(v / u.bias_correction2) + eps);
      params[i] = static_cast<float>(params[i] - u.lr * (update + decays[i - first] * params[i]));
    }
  }
}

template void AdamW::Step<float>(float*, const float*, const std::vector<bool>&, double);
template void AdamW::Step<numeric::Bf16>(float*, const numeric::Bf16*, const std::vector<bool>&, double);

}  // namespace avf::optim
