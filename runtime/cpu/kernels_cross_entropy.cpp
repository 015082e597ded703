// The softmax cross-entropy over the vocabulary, whole or vocab-parallel
// (kernels.h). Rows are independent, so threads take rows. The statistics
// (row max, target logit, exponential sums, losses) are Wide<T>; for bf16 the
// probabilities are rounded twice, once as e^(logit - max) in
// CrossEntropySoftmax and once normalised in CrossEntropyFinish, since the
// unnormalised values wait in `probs` while the tensor group sums the rows.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/vector_math.h"

namespace avf::cpu {

using backend::Bf16;
using backend::Narrow;
using backend::Widen;
using detail::Exp;
using detail::kParallelMin;
using detail::Max;

namespace {

// probs[j] = e^(logits[j] - max) for j < v; returns their sum, of the values
// before rounding. A row is summed in blocks of kSumBlock, each in the vector
// lanes, the blocks' sums added in order: the float error of a 50,257-term row
// stays near that of a few hundred terms. Bf16 goes through fp32 copies of a
// block, where GCC vectorises the exponentials twice as wide as on bf16.
template <typename T>
AVF_VECTOR_CLONES auto ExpAndSum(T* probs, const T* logits, Wide<T> max, int64_t v) -> Wide<T> {
  using W = Wide<T>;
  constexpr bool kWidened = !std::is_same_v<T, W>;
  constexpr int64_t kSumBlock = 512;
  W total = 0, in[kSumBlock], out[kSumBlock];
  for (int64_t j0 = 0; j0 < v; j0 += kSumBlock) {
    int64_t len = std::min(kSumBlock, v - j0);
    const W* x = in;
    W* e = out;
    if constexpr (kWidened) {
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) in[j] = Widen(logits[j0 + j]);
    } else {
      x = logits + j0, e = probs + j0;
    }
    W sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < len; ++j) {
      e[j] = Exp(x[j] - max);
      sum += e[j];
    }
    if constexpr (kWidened) {
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) probs[j0 + j] = Narrow<T>(out[j]);
    }
    total += sum;
  }
  return total;
}

// The largest logit of a row (NaNs are skipped), in a function cloned per
// instruction set: at the baseline GCC keeps a float max reduction's
// accumulator in memory, 3 to 4 times slower.
template <typename T>
AVF_VECTOR_CLONES auto LogitsMax(const T* logits, int64_t v) -> Wide<T> {
  Wide<T> max = -INFINITY;
#pragma omp simd reduction(max : max)
  for (int64_t j = 0; j < v; ++j) max = Max(max, Widen(logits[j]));
  return max;
}

// x[j] *= scale for j < v.
template <typename T>
AVF_VECTOR_CLONES void ScaleRow(T* x, Wide<T> scale, int64_t v) {
#pragma omp simd
  for (int64_t j = 0; j < v; ++j) x[j] = Narrow<T>(Widen(x[j]) * scale);
}

// d[j] += p[j] scale for j < v, then d[target] -= scale (target < 0: none),
// each element rounded once.
template <typename T>
AVF_VECTOR_CLONES void AddScaledRow(T* d, const T* p, Wide<T> scale, int64_t target, int64_t v) {
  Wide<T> target_before = target >= 0 ? Widen(d[target]) : Wide<T>(0);
#pragma omp simd
  for (int64_t j = 0; j < v; ++j) d[j] = Narrow<T>(Widen(d[j]) + Widen(p[j]) * scale);
  if (target >= 0) d[target] = Narrow<T>(target_before + Widen(p[target]) * scale - scale);
}

}  // namespace

template <typename T>
void CrossEntropyStats(Wide<T>* row_max, Wide<T>* target_logit, const T* logits, const uint32_t* targets, int64_t n,
                       int64_t v, int64_t vocab_first) {
#pragma omp parallel for if (n * v >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* z = logits + i * v;
    row_max[i] = LogitsMax(z, v);
    int64_t target = static_cast<int64_t>(targets[i]) - vocab_first;
    target_logit[i] = target >= 0 && target < v ? Widen(z[target]) : Wide<T>(0);
  }
}

template <typename T>
void CrossEntropySoftmax(T* probs, Wide<T>* row_sum, const T* logits, const Wide<T>* row_max, int64_t n, int64_t v) {
#pragma omp parallel for if (n * v >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) row_sum[i] = ExpAndSum(probs + i * v, logits + i * v, row_max[i], v);
}

template <typename T>
void CrossEntropyFinish(Wide<T>* losses, T* probs, const Wide<T>* row_sum, const Wide<T>* row_max,
                        const Wide<T>* target_logit, int64_t n, int64_t v) {
#pragma omp parallel for if (n * v >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    ScaleRow(probs + i * v, Wide<T>(1) / row_sum[i], v);
    // -log softmax, from the logits: no log(0) for a vanishing probability.
    losses[i] = std::log(row_sum[i]) + row_max[i] - target_logit[i];
  }
}

template <typename T>
void CrossEntropyForward(Wide<T>* losses, T* probs, const T* logits, const uint32_t* targets, int64_t n, int64_t v) {
  std::vector<Wide<T>> max(static_cast<size_t>(n)), target(static_cast<size_t>(n)), sum(static_cast<size_t>(n));
  CrossEntropyStats(max.data(), target.data(), logits, targets, n, v, int64_t{0});
  CrossEntropySoftmax(probs, sum.data(), logits, max.data(), n, v);
  CrossEntropyFinish(losses, probs, sum.data(), max.data(), target.data(), n, v);
}

// The target's element gets its probability term and -dloss in one rounding.
template <typename T>
void CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const Wide<T>* dlosses, int64_t n,
                          int64_t v, int64_t vocab_first) {
#pragma omp parallel for if (n * v >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    int64_t target = static_cast<int64_t>(targets[i]) - vocab_first;
    AddScaledRow(dlogits + i * v, probs + i * v, dlosses[i], target < v ? target : -1, v);
  }
}

template <typename T>
void MaxOverBlocks(T* out, const T* blocks, int64_t count, int64_t nblocks) {
  for (int64_t i = 0; i < count; ++i) {
    T m = blocks[i];
    for (int64_t b = 1; b < nblocks; ++b) m = std::max(m, blocks[b * count + i]);
    out[i] = m;
  }
}

#define AVF_CROSS_ENTROPY_KERNELS(T)                                                                                   \
  template void CrossEntropyForward<T>(Wide<T>*, T*, const T*, const uint32_t*, int64_t, int64_t);                     \
  template void CrossEntropyStats<T>(Wide<T>*, Wide<T>*, const T*, const uint32_t*, int64_t, int64_t, int64_t);        \
  template void CrossEntropySoftmax<T>(T*, Wide<T>*, const T*, const Wide<T>*, int64_t, int64_t);                      \
  template void CrossEntropyFinish<T>(Wide<T>*, T*, const Wide<T>*, const Wide<T>*, const Wide<T>*, int64_t, int64_t); \
  template void CrossEntropyBackward<T>(T*, const T*, const uint32_t*, const Wide<T>*, int64_t, int64_t, int64_t);

AVF_CROSS_ENTROPY_KERNELS(float)
AVF_CROSS_ENTROPY_KERNELS(double)
AVF_CROSS_ENTROPY_KERNELS(Bf16)
// Only on the statistics' types (the tensor group's gathered row maxima).
template void MaxOverBlocks<float>(float*, const float*, int64_t, int64_t);
template void MaxOverBlocks<double>(double*, const double*, int64_t, int64_t);

}  // namespace avf::cpu
