#include "optim/optimizer.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "numeric/bf16.h"
#include "numeric/vector_clones.h"

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

auto ElementScalarsOf(const OptimizerConfig& c, const UpdateScalars& u) -> ElementScalars {
  return {static_cast<float>(u.clip),
          static_cast<float>(c.beta1),
          static_cast<float>(1.0 - c.beta1),
          static_cast<float>(c.beta2),
          static_cast<float>(1.0 - c.beta2),
          static_cast<float>(u.lr / u.bias_correction1),
          static_cast<float>(1.0 / std::sqrt(u.bias_correction2)),
          static_cast<float>(c.eps),
          static_cast<float>(u.lr * c.weight_decay)};
}

AdamW::AdamW(OptimizerConfig config, int64_t size, std::vector<ElementRun> decayed)
    : config_(config),
      m_(static_cast<size_t>(size), 0.0f),
      v_(static_cast<size_t>(size), 0.0f),
      decayed_(std::move(decayed)) {
  assert(std::is_sorted(decayed_.begin(), decayed_.end(),
                        [](const ElementRun& a, const ElementRun& b) { return a.first + a.count <= b.first; }));
}

namespace {

auto Widened(float g) -> float { return g; }
auto Widened(double g) -> double { return g; }
auto Widened(numeric::Bf16 g) -> float { return numeric::ToFloat(g); }

// Elements [first, first + count) of the update, all with one weight decay.
template <typename G>
AVF_VECTOR_CLONES void UpdateRun(float* params, const G* grads, float* m, float* v, int64_t first, int64_t count,
                                 const ElementScalars& s, float lr_decay) {
  float* p = params + first;
  const G* g = grads + first;
  float* mf = m + first;
  float* vf = v + first;
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) AdamWElement(p[i], Widened(g[i]), mf[i], vf[i], s, lr_decay);
}

}  // namespace

// Elements per thread task; the update is element-wise, so results do not
// depend on how the blocks are shared out. Below kParallelMin elements one
// thread does it all: starting the team would cost more.
constexpr int64_t kBlock = 1 << 13, kParallelMin = 1 << 20;

template <typename G>
void UpdateElements(float* params, const G* grads, float* m, float* v, int64_t n,
                    const std::vector<ElementRun>& decayed, const ElementScalars& s) {
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t first = 0; first < n; first += kBlock) {
    const int64_t end = std::min(n, first + kBlock);
    // The block in runs of one decay: the decayed runs that reach past
    // `first`, and the gaps between them.
    auto run = std::partition_point(decayed.begin(), decayed.end(),
                                    [&](const ElementRun& r) { return r.first + r.count <= first; });
    for (int64_t at = first; at < end;) {
      bool decays = run != decayed.end() && run->first <= at;
      int64_t stop =
          decays ? std::min(end, run->first + run->count) : std::min(end, run != decayed.end() ? run->first : end);
      UpdateRun(params, grads, m, v, at, stop - at, s, decays ? s.lr_decay : 0.0f);
      if (decays && stop == run->first + run->count) ++run;
      at = stop;
    }
  }
}

template <typename G>
void AdamW::Step(float* params, const G* grads, double grad_norm) {
  const ElementScalars s = ElementScalarsOf(config_, ScalarsOf(config_, step_, grad_norm));
  ++step_;
  UpdateElements(params, grads, m_.data(), v_.data(), static_cast<int64_t>(m_.size()), decayed_, s);
}

// Each run in blocks whose sums are added in order: the same result on any
// thread count.
template <typename G>
auto SquaredNorm(const G* x, const std::vector<ElementRun>& runs) -> double {
  constexpr int64_t kNormBlock = 1 << 16;
  double sum = 0;
  for (const ElementRun& r : runs) {
    int64_t blocks = (r.count + kNormBlock - 1) / kNormBlock;
    std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (blocks > 16)
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t first = r.first + b * kNormBlock, end = std::min(r.first + r.count, first + kNormBlock);
      double block = 0;
      for (int64_t i = first; i < end; ++i) {
        double g = Widened(x[i]);
        block += g * g;
      }
      partial[static_cast<size_t>(b)] = block;
    }
    for (double p : partial) sum += p;
  }
  return sum;
}

#define AVF_OPTIM_ELEMENTS(G)                                                                                \
  template void AdamW::Step<G>(float*, const G*, double);                                                    \
  template void UpdateElements<G>(float*, const G*, float*, float*, int64_t, const std::vector<ElementRun>&, \
                                  const ElementScalars&);                                                    \
  template auto SquaredNorm<G>(const G*, const std::vector<ElementRun>&)->double;

AVF_OPTIM_ELEMENTS(float)
AVF_OPTIM_ELEMENTS(double)
AVF_OPTIM_ELEMENTS(numeric::Bf16)

}  // namespace avf::optim
