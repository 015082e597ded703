#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>

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

void AdamW::Step(float* params, const float* grads, const std::vector<bool>& decay, double grad_norm) {
  auto [lr, clip, bc1, bc2] = ScalarsOf(config_, step_, grad_norm);
  ++step_;
  for (size_t i = 0; i < m_.size(); ++i) {
    double g = static_cast<double>(grads[i]) * clip;
    double m = config_.beta1 * m_[i] + (1.0 - config_.beta1) * g;
    double v = config_.beta2 * v_[i] + (1.0 - config_.beta2) * g * g;
    m_[i] = static_cast<float>(m);
    v_[i] = static_cast<float>(v);
    double update = (m / bc1) / (std::sqrt(v / bc2) + config_.eps);
    double wd = decay.empty() || decay[i] ? config_.weight_decay * params[i] : 0.0;
    params[i] = static_cast<float>(params[i] - lr * (update + wd));
  }
}

}  // namespace avf::optim
