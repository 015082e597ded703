// AdamW with the learning-rate schedules of the language (`optimizer {
// schedule = cosine | linear | constant; warmup = N }`) and global-norm
// gradient clipping, over a flat parameter buffer (or one rank's ZeRO slice
// of it: the update is elementwise, so a slice updates like the whole).
#pragma once

#include <cmath>
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

#if defined(__CUDACC__)
#define AVF_HOST_DEVICE __host__ __device__
#else
#define AVF_HOST_DEVICE
#endif

// What one element's update needs, in fp32, each product of the schedule's
// scalars formed once in double: the update is fp32 throughout (as
// PyTorch's), so that it vectorises and stays memory-bound.
struct ElementScalars {
  float clip, beta1, one_minus_beta1, beta2, one_minus_beta2;
  float step_size;     // lr / bias_correction1
  float inv_sqrt_bc2;  // 1 / sqrt(bias_correction2)
  float eps;
  float lr_decay;  // lr x weight_decay, where weight decay applies
};
auto ElementScalarsOf(const OptimizerConfig& c, const UpdateScalars& u) -> ElementScalars;

// AdamW on one element, in fp32; `lr_decay` is s.lr_decay or 0. The one
// definition that AdamW::Step and the CUDA update (kernels/) both use.
AVF_HOST_DEVICE inline void AdamWElement(float& param, float grad, float& m, float& v, const ElementScalars& s,
                                         float lr_decay) {
  float g = grad * s.clip;
  m = s.beta1 * m + s.one_minus_beta1 * g;
  v = s.beta2 * v + s.one_minus_beta2 * (g * g);
  float denominator = sqrtf(v) * s.inv_sqrt_bc2 + s.eps;
  param = param - lr_decay * param - s.step_size * (m / denominator);
}

// Elements [first, first + count) of the buffer the optimizer updates.
struct ElementRun {
  int64_t first = 0, count = 0;
};

// One AdamW update of params(N) (fp32; with bf16 training the master copy)
// with grads(N) (fp32, bf16 or, for the fp64 checks, double, each widened
// and used in fp32) and the moments m(N), v(N): AdamWElement on each
// element, weight decay (s.lr_decay) inside `decayed` (sorted runs of these
// indices), none elsewhere. Element-wise over fixed blocks, threaded when
// large: the result does not depend on the thread count.
template <typename G>
void UpdateElements(float* params, const G* grads, float* m, float* v, int64_t n,
                    const std::vector<ElementRun>& decayed, const ElementScalars& s);

// The sum of x[i]^2 over `runs` (sorted, disjoint runs of x's indices), in
// double; the same result on any thread count.
template <typename G>
auto SquaredNorm(const G* x, const std::vector<ElementRun>& runs) -> double;

class AdamW {
 public:
  // `decayed`: the elements weight decay applies to (the matrices, not norms
  // and biases), sorted, disjoint runs within [0, size).
  AdamW(OptimizerConfig config, int64_t size, std::vector<ElementRun> decayed);

  // One update of params[0..size) with grads; `grad_norm` is the norm of the
  // WHOLE gradient (all ranks), so every slice clips by the same factor.
  // The parameters are fp32 (with bf16 training, the master copy); the
  // gradients fp32 or numeric::Bf16, widened exactly: the update is fp32
  // either way. Element-wise over fixed blocks, threaded when large: the
  // result does not depend on the thread count.
  template <typename G>
  void Step(float* params, const G* grads, double grad_norm);

  auto step() const -> int64_t { return step_; }
  auto config() const -> const OptimizerConfig& { return config_; }
  auto moments() -> std::pair<std::vector<float>&, std::vector<float>&> { return {m_, v_}; }
  void set_step(int64_t step) { step_ = step; }

 private:
  OptimizerConfig config_;
  std::vector<float> m_, v_;
  std::vector<ElementRun> decayed_;
  int64_t step_ = 0;
};

}  // namespace avf::optim
