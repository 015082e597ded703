// Rotary embeddings, causal attention and the softmax cross-entropy (kernels.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/kernels.h"

namespace avf::cpu {

using detail::Gemm;

namespace {

// Rotates every (2i, 2i+1) pair of x by `sign` x its angle.
template <typename T>
void Rotate(T* x, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta, double sign) {
  for (int64_t pos = 0; pos < t; ++pos) {
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      double angle = sign * static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(i) / head_dim);
      double cs = std::cos(angle), sn = std::sin(angle);
      for (int64_t bb = 0; bb < b; ++bb) {
        for (int64_t h = 0; h < heads; ++h) {
          T* p = x + ((bb * t + pos) * heads + h) * head_dim + 2 * i;
          double x0 = p[0], x1 = p[1];
          p[0] = static_cast<T>(x0 * cs - x1 * sn);
          p[1] = static_cast<T>(x0 * sn + x1 * cs);
        }
      }
    }
  }
}

constexpr int64_t kParallelMin = 1 << 14;

// One (batch, query head) pair's matrices inside the (B, T, heads, head_dim)
// activations: rows are positions, `ld` elements apart, so the BLAS reads a
// head in place without copies.
template <typename T>
struct HeadViews {
  const AttentionShape& s;
  auto q_ld() const -> int64_t { return s.heads * s.head_dim; }
  auto kv_ld() const -> int64_t { return s.kv_heads * s.head_dim; }
  auto Q(int64_t bb, int64_t h) const -> int64_t { return bb * s.t * q_ld() + h * s.head_dim; }
  auto KV(int64_t bb, int64_t h) const -> int64_t {
    return bb * s.t * kv_ld() + h / (s.heads / s.kv_heads) * s.head_dim;
  }
  auto Att(int64_t bb, int64_t h) const -> int64_t { return (bb * s.heads + h) * s.t * s.t; }
};

// In place on the T x T scores of one head: causal softmax of each row,
// zero above the diagonal.
template <typename T>
void CausalSoftmax(T* scores, int64_t t) {
#pragma omp parallel for if (t * t >= kParallelMin)
  for (int64_t pos = 0; pos < t; ++pos) {
    T* row = scores + pos * t;
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j <= pos; ++j) max = std::max(max, static_cast<double>(row[j]));
    for (int64_t j = 0; j <= pos; ++j) sum += static_cast<double>(row[j] = static_cast<T>(std::exp(row[j] - max)));
    for (int64_t j = 0; j <= pos; ++j) row[j] = static_cast<T>(row[j] / sum);
    std::fill(row + pos + 1, row + t, T(0));
  }
}

// dscores = probs * (dprobs - rowsum(probs * dprobs)) * scale, in place on
// dprobs (T x T); above the diagonal probs are 0, so dscores are too.
template <typename T>
void SoftmaxBackward(T* dprobs, const T* probs, int64_t t, double scale) {
#pragma omp parallel for if (t * t >= kParallelMin)
  for (int64_t pos = 0; pos < t; ++pos) {
    const T* p = probs + pos * t;
    T* d = dprobs + pos * t;
    double weighted = 0;
    for (int64_t j = 0; j <= pos; ++j) weighted += static_cast<double>(p[j]) * d[j];
    for (int64_t j = 0; j < t; ++j) d[j] = j <= pos ? static_cast<T>(p[j] * (d[j] - weighted) * scale) : T(0);
  }
}

}  // namespace

template <typename T>
void RopeForward(T* x, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta) {
  Rotate(x, b, t, heads, head_dim, theta, 1.0);
}

template <typename T>
void RopeBackward(T* dx, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta) {
  Rotate(dx, b, t, heads, head_dim, theta, -1.0);
}

// Per (batch, head): scores = scale Q K^T and out = P V, two GEMMs on the
// head's rows in place. The GEMMs compute the whole T x T block, masked
// afterwards: twice the causal FLOPs, but at BLAS speed.
template <typename T>
void AttentionForward(T* out, T* att, const T* q, const T* k, const T* v, const AttentionShape& s) {
  HeadViews<T> ix{s};
  T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  for (int64_t bb = 0; bb < s.b; ++bb) {
    for (int64_t h = 0; h < s.heads; ++h) {
      T* probs = att + ix.Att(bb, h);
      Gemm(false, true, s.t, s.t, s.head_dim, scale, q + ix.Q(bb, h), ix.q_ld(), k + ix.KV(bb, h), ix.kv_ld(), T(0),
           probs, s.t);
      CausalSoftmax(probs, s.t);
      Gemm(false, false, s.t, s.head_dim, s.t, T(1), probs, s.t, v + ix.KV(bb, h), ix.kv_ld(), T(0), out + ix.Q(bb, h),
           ix.q_ld());
    }
  }
}

// Per (batch, head): dP = dO V^T, dV += P^T dO, dS = softmax'(dP), then
// dQ += dS K and dK += dS^T Q. Query heads sharing a key/value head add
// into it one after another, in head order.
template <typename T>
void AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* att, const T* q, const T* k, const T* v,
                       const AttentionShape& s) {
  HeadViews<T> ix{s};
  double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  std::vector<T> dscores(static_cast<size_t>(s.t * s.t));
  for (int64_t bb = 0; bb < s.b; ++bb) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const T* probs = att + ix.Att(bb, h);
      const T* dy = dout + ix.Q(bb, h);
      int64_t kv = ix.KV(bb, h), qo = ix.Q(bb, h);
      Gemm(false, true, s.t, s.t, s.head_dim, T(1), dy, ix.q_ld(), v + kv, ix.kv_ld(), T(0), dscores.data(), s.t);
      Gemm(true, false, s.t, s.head_dim, s.t, T(1), probs, s.t, dy, ix.q_ld(), T(1), dv + kv, ix.kv_ld());
      SoftmaxBackward(dscores.data(), probs, s.t, scale);
      Gemm(false, false, s.t, s.head_dim, s.t, T(1), dscores.data(), s.t, k + kv, ix.kv_ld(), T(1), dq + qo, ix.q_ld());
      Gemm(true, false, s.t, s.head_dim, s.t, T(1), dscores.data(), s.t, q + qo, ix.q_ld(), T(1), dk + kv, ix.kv_ld());
    }
  }
}

template <typename T>
void CrossEntropyStats(Wide<T>* row_max, Wide<T>* target_logit, const T* logits, const uint32_t* targets, int64_t n,
                       int64_t v, int64_t vocab_first) {
#pragma omp parallel for if (n * v >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* z = logits + i * v;
    row_max[i] = *std::max_element(z, z + v);
    int64_t target = static_cast<int64_t>(targets[i]) - vocab_first;
    target_logit[i] = target >= 0 && target < v ? z[target] : T(0);
  }
}

template <typename T>
void CrossEntropySoftmax(T* probs, Wide<T>* row_sum, const T* logits, const Wide<T>* row_max, int64_t n, int64_t v) {
#pragma omp parallel for if (n * v >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* z = logits + i * v;
    T* p = probs + i * v;
    double max = row_max[i], sum = 0;
    for (int64_t j = 0; j < v; ++j) sum += p[j] = static_cast<T>(std::exp(static_cast<double>(z[j]) - max));
    row_sum[i] = static_cast<T>(sum);
  }
}

template <typename T>
void CrossEntropyFinish(Wide<T>* losses, T* probs, const Wide<T>* row_sum, const Wide<T>* row_max,
                        const Wide<T>* target_logit, int64_t n, int64_t v) {
#pragma omp parallel for if (n * v >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    T inverse = static_cast<T>(1.0 / static_cast<double>(row_sum[i]));
    for (int64_t j = 0; j < v; ++j) probs[i * v + j] *= inverse;
    // -log softmax, from the logits: no log(0) for a vanishing probability.
    losses[i] = static_cast<T>(std::log(static_cast<double>(row_sum[i])) + row_max[i] - target_logit[i]);
  }
}

template <typename T>
void CrossEntropyForward(Wide<T>* losses, T* probs, const T* logits, const uint32_t* targets, int64_t n, int64_t v) {
  std::vector<T> max(static_cast<size_t>(n)), target(static_cast<size_t>(n)), sum(static_cast<size_t>(n));
  CrossEntropyStats(max.data(), target.data(), logits, targets, n, v, int64_t{0});
  CrossEntropySoftmax(probs, sum.data(), logits, max.data(), n, v);
  CrossEntropyFinish(losses, probs, sum.data(), max.data(), target.data(), n, v);
}

template <typename T>
void CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const Wide<T>* dlosses, int64_t n,
                          int64_t v, int64_t vocab_first) {
#pragma omp parallel for if (n * v >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    T* d = dlogits + i * v;
    const T* p = probs + i * v;
    for (int64_t j = 0; j < v; ++j) d[j] += p[j] * dlosses[i];
    int64_t target = static_cast<int64_t>(targets[i]) - vocab_first;
    if (target >= 0 && target < v) d[target] -= dlosses[i];
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

#define AVF_ATTENTION_KERNELS(T)                                                                                       \
  template void RopeForward<T>(T*, int64_t, int64_t, int64_t, int64_t, double);                                        \
  template void RopeBackward<T>(T*, int64_t, int64_t, int64_t, int64_t, double);                                       \
  template void AttentionForward<T>(T*, T*, const T*, const T*, const T*, const AttentionShape&);                      \
  template void AttentionBackward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,                     \
                                     const AttentionShape&);                                                           \
  template void CrossEntropyForward<T>(Wide<T>*, T*, const T*, const uint32_t*, int64_t, int64_t);                     \
  template void CrossEntropyStats<T>(Wide<T>*, Wide<T>*, const T*, const uint32_t*, int64_t, int64_t, int64_t);        \
  template void CrossEntropySoftmax<T>(T*, Wide<T>*, const T*, const Wide<T>*, int64_t, int64_t);                      \
  template void CrossEntropyFinish<T>(Wide<T>*, T*, const Wide<T>*, const Wide<T>*, const Wide<T>*, int64_t, int64_t); \
  template void CrossEntropyBackward<T>(T*, const T*, const uint32_t*, const Wide<T>*, int64_t, int64_t, int64_t);     \
  template void MaxOverBlocks<T>(T*, const T*, int64_t, int64_t);

AVF_ATTENTION_KERNELS(float)
AVF_ATTENTION_KERNELS(double)

}  // namespace avf::cpu
