// AdamW with the learning-rate schedules of the language (`optimizer {
// schedule = cosine | linear | constant; warmup = N }`) and global-norm
// gradient clipping, over a flat parameter buffer (or one rank's ZeRO slice
// of it: the update is elementwise, so a slice updates like the whole).
#pragma once

#include <cstdint>
#include <vector>

namespace avf::optim {

enum class Schedule : uint8_t { Cosine, Linear, Constant };

struct OptimizerConfig {
  double lr = 3e-4;  // peak learning rate
  double beta1 = 0.9, beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;
  int64_t warmup = 0;       // steps of linear warm-up from lr / warmup
  int64_t total_steps = 1;  // the schedule decays to min_lr_ratio x lr at the last step
  double min_lr_ratio = 0.1;
  Schedule schedule = Schedule::Cosine;
  double clip_norm = 1.0;  // <= 0: no clipping
};

// The learning rate at `step` (0-based): warm-up, then the decay.
auto LearningRate(const OptimizerConfig& c, int64_t step) -> double;

// sqrt(sum of squares), accumulated in double.
auto GlobalNorm(const float* grads, int64_t n) -> double;

// The scalars of the update at `step` (0-based, as LearningRate): the
// learning rate, the clipping factor for the whole gradient's norm, and
// Adam's bias corrections 1 - beta^(step + 1). AdamW::Step and the CUDA
// update (kernels/) apply them element by element alike.
struct UpdateScalars {
  double lr, clip, bias_correction1, bias_correction2;
};
auto ScalarsOf(const OptimizerConfig& c, int64_t step, double grad_norm) -> UpdateScalars;

class AdamW {
 public:
  AdamW(OptimizerConfig config, int64_t size) : config_(config), m_(size, 0.0f), v_(size, 0.0f) {}

  // One update of params[0..size) with grads; `grad_norm` is the norm of the
  // WHOLE gradient (all ranks), so every slice clips by the same factor.
  // Weight decay applies where `decay` is true (not to norms and biases).
  // The parameters are fp32 (with bf16 training, the master copy); the
  // gradients fp32 or numeric::Bf16, widened exactly: the update is fp32
  // either way.
  template <typename G>
  void Step(float* params, const G* grads, const std::vector<bool>& decay, double grad_norm);

  auto step() const -> int64_t { return step_; }
  auto config() const -> const OptimizerConfig& { return config_; }
  auto moments() -> std::pair<std::vector<float>&, std::vector<float>&> { return {m_, v_}; }
  void set_step(int64_t step) { step_ = step; }

 private:
  OptimizerConfig config_;
  std::vector<float> m_, v_;
  int64_t step_ = 0;
};

}  // namespace avf::optim
