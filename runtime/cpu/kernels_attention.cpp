// Rotary embeddings and causal attention (kernels.h).
//
// Attention runs its (batch, head) pairs in parallel, one pair per thread at a
// time with single-threaded GEMMs on the head's rows in place (so detail::Gemm
// is called from several threads at once). Scores and their gradients live in
// a Wide<T> scratch per thread: for bf16 the GEMMs write fp32 there, the
// softmax and its backward run in fp32, and only the probabilities (kept in
// `att`) and dscores (a GEMM operand) are rounded to bf16, once. The T x T
// GEMMs go in blocks of kCausalBlock rows (or columns) that skip the blocks
// above the diagonal, which the mask zeroes anyway.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/kernels.h"
#include "cpu/vector_math.h"

namespace avf::cpu {

using backend::Bf16;
using backend::Narrow;
using backend::Widen;
using detail::AddWide;
using detail::Exp;
using detail::Gemm;
using detail::kParallelMin;
using detail::Max;

namespace {

// cos and sin of every (position, pair) angle sign x pos x theta^(-2i/head_dim),
// computed in double: cos at [pos * half + i], sin at [(t + pos) * half + i].
template <typename W>
auto RotationTable(int64_t t, int64_t half, double theta, double sign) -> std::vector<W> {
  std::vector<W> table(static_cast<size_t>(2 * t * half));
  for (int64_t pos = 0; pos < t; ++pos) {
    for (int64_t i = 0; i < half; ++i) {
      double angle = sign * static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(i) / (2 * half));
      table[static_cast<size_t>(pos * half + i)] = static_cast<W>(std::cos(angle));
      table[static_cast<size_t>((t + pos) * half + i)] = static_cast<W>(std::sin(angle));
    }
  }
  return table;
}

// Rotates every (2i, 2i+1) pair of x(B, T, heads, head_dim) by `sign` x its angle.
template <typename T>
void Rotate(T* x, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta, double sign) {
  using W = Wide<T>;
  int64_t half = head_dim / 2;
  std::vector<W> table = RotationTable<W>(t, half, theta, sign);
#pragma omp parallel for if (b * t * heads * head_dim >= kParallelMin)
  for (int64_t row = 0; row < b * t; ++row) {
    const W* cs = table.data() + (row % t) * half;
    const W* sn = cs + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      T* p = x + (row * heads + h) * head_dim;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        W x0 = Widen(p[2 * i]), x1 = Widen(p[2 * i + 1]);
        p[2 * i] = Narrow<T>(x0 * cs[i] - x1 * sn[i]);
        p[2 * i + 1] = Narrow<T>(x0 * sn[i] + x1 * cs[i]);
      }
    }
  }
}

// One (batch, query head) pair's matrices inside the (B, T, heads, head_dim)
// activations: rows are positions, `ld` elements apart, so the GEMMs read a
// head in place without copies.
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

constexpr int64_t kCausalBlock = 64;

// c(t x t) = alpha x(t x hd) y(t x hd)^T on and below the diagonal: row block
// [r0, r1) gets columns [0, r1) only (the rest of c is left as it was).
template <typename T, typename W>
void LowerProduct(W* c, const T* x, int64_t x_ld, const T* y, int64_t y_ld, int64_t t, int64_t hd, W alpha) {
  for (int64_t r0 = 0; r0 < t; r0 += kCausalBlock) {
    int64_t r1 = std::min(t, r0 + kCausalBlock);
    Gemm(false, true, r1 - r0, r1, hd, alpha, x + r0 * x_ld, x_ld, y, y_ld, W(0), c + r0 * t, t);
  }
}

// c(t x hd) = a(t x t) b(t x hd) + beta c, a lower triangular: row block
// [r0, r1) reads a's columns [0, r1) and b's rows [0, r1) only.
template <typename T, typename C, typename W>
void LowerTimes(C* c, int64_t c_ld, const T* a, const T* b, int64_t b_ld, int64_t t, int64_t hd, W beta) {
  for (int64_t r0 = 0; r0 < t; r0 += kCausalBlock) {
    int64_t r1 = std::min(t, r0 + kCausalBlock);
    Gemm(false, false, r1 - r0, hd, r1, W(1), a + r0 * t, t, b, b_ld, beta, c + r0 * c_ld, c_ld);
  }
}

// c(t x hd) += a(t x t)^T b(t x hd), a lower triangular: row block [c0, c1)
// of c reads a's rows [c0, t) only.
template <typename T, typename W>
void LowerTransposedTimes(W* c, const T* a, const T* b, int64_t b_ld, int64_t t, int64_t hd) {
  for (int64_t c0 = 0; c0 < t; c0 += kCausalBlock) {
    int64_t c1 = std::min(t, c0 + kCausalBlock);
    Gemm(true, false, c1 - c0, hd, t - c0, W(1), a + c0 * t + c0, t, b + c0 * b_ld, b_ld, W(1), c + c0 * hd, hd);
  }
}

// probs = causal softmax of each row of scores (t x t), zero above the
// diagonal; reads scores on and below the diagonal only, and overwrites them.
template <typename T>
void CausalSoftmax(T* probs, Wide<T>* scores, int64_t t) {
  using W = Wide<T>;
  for (int64_t pos = 0; pos < t; ++pos) {
    W* s = scores + pos * t;
    T* p = probs + pos * t;
    W max = -INFINITY, sum = 0;
#pragma omp simd reduction(max : max)
    for (int64_t j = 0; j <= pos; ++j) max = Max(max, s[j]);
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j <= pos; ++j) {
      s[j] = Exp(s[j] - max);
      sum += s[j];
    }
    W inverse = W(1) / sum;
#pragma omp simd
    for (int64_t j = 0; j <= pos; ++j) p[j] = Narrow<T>(s[j] * inverse);
    std::fill(p + pos + 1, p + t, T{});
  }
}

// dscores = probs (dprobs - rowsum(probs dprobs)) scale on and below the
// diagonal, zero above (t x t).
template <typename T>
void SoftmaxBackward(T* dscores, const T* probs, const Wide<T>* dprobs, int64_t t, Wide<T> scale) {
  using W = Wide<T>;
  for (int64_t pos = 0; pos < t; ++pos) {
    const T* p = probs + pos * t;
    const W* dp = dprobs + pos * t;
    T* ds = dscores + pos * t;
    W weighted = 0;
#pragma omp simd reduction(+ : weighted)
    for (int64_t j = 0; j <= pos; ++j) weighted += Widen(p[j]) * dp[j];
#pragma omp simd
    for (int64_t j = 0; j <= pos; ++j) ds[j] = Narrow<T>(Widen(p[j]) * (dp[j] - weighted) * scale);
    std::fill(ds + pos + 1, ds + t, T{});
  }
}

template <typename W>
auto AttentionScale(const AttentionShape& s) -> W {
  return static_cast<W>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
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

// Per (batch, head): scores = scale Q K^T, probs = causal softmax, out = P V.
template <typename T>
void AttentionForward(T* out, T* att, const T* q, const T* k, const T* v, const AttentionShape& s) {
  using W = Wide<T>;
  HeadViews ix{s};
  W scale = AttentionScale<W>(s);
#pragma omp parallel if (s.b * s.heads * s.t * s.t >= kParallelMin)
  {
    std::vector<W> scores(static_cast<size_t>(s.t * s.t));
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < s.b * s.heads; ++bh) {
      int64_t bb = bh / s.heads, h = bh % s.heads;
      T* probs = att + ix.Att(bb, h);
      LowerProduct(scores.data(), q + ix.Q(bb, h), ix.q_ld(), k + ix.KV(bb, h), ix.kv_ld(), s.t, s.head_dim, scale);
      CausalSoftmax(probs, scores.data(), s.t);
      LowerTimes(out + ix.Q(bb, h), ix.q_ld(), probs, v + ix.KV(bb, h), ix.kv_ld(), s.t, s.head_dim, W(0));
    }
  }
}

// Per (batch, key/value head), its query heads in order: dP = dO V^T, dV +=
// P^T dO, dS = softmax'(dP), dQ += dS K, dK += dS^T Q. dK and dV are summed
// over the group's query heads in Wide<T> and added once.
template <typename T>
void AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* att, const T* q, const T* k, const T* v,
                       const AttentionShape& s) {
  using W = Wide<T>;
  HeadViews ix{s};
  W scale = AttentionScale<W>(s);
  int64_t group = s.heads / s.kv_heads, t = s.t, hd = s.head_dim;
#pragma omp parallel if (s.b * s.heads * s.t * s.t >= kParallelMin)
  {
    std::vector<W> dprobs(static_cast<size_t>(t * t)), dk_sum(static_cast<size_t>(t * hd)),
        dv_sum(static_cast<size_t>(t * hd));
    std::vector<T> dscores(static_cast<size_t>(t * t));
#pragma omp for schedule(static)
    for (int64_t bk = 0; bk < s.b * s.kv_heads; ++bk) {
      int64_t bb = bk / s.kv_heads, first = bk % s.kv_heads * group, kv = ix.KV(bb, first);
      std::fill(dk_sum.begin(), dk_sum.end(), W(0));
      std::fill(dv_sum.begin(), dv_sum.end(), W(0));
      for (int64_t h = first; h < first + group; ++h) {
        const T* probs = att + ix.Att(bb, h);
        const T* dy = dout + ix.Q(bb, h);
        LowerProduct(dprobs.data(), dy, ix.q_ld(), v + kv, ix.kv_ld(), t, hd, W(1));
        LowerTransposedTimes(dv_sum.data(), probs, dy, ix.q_ld(), t, hd);
        SoftmaxBackward(dscores.data(), probs, dprobs.data(), t, scale);
        LowerTimes(dq + ix.Q(bb, h), ix.q_ld(), dscores.data(), k + kv, ix.kv_ld(), t, hd, W(1));
        LowerTransposedTimes(dk_sum.data(), dscores.data(), q + ix.Q(bb, h), ix.q_ld(), t, hd);
      }
      for (int64_t pos = 0; pos < t; ++pos) {
        AddWide(dk + kv + pos * ix.kv_ld(), dk_sum.data() + pos * hd, hd);
        AddWide(dv + kv + pos * ix.kv_ld(), dv_sum.data() + pos * hd, hd);
      }
    }
  }
}

#define AVF_ATTENTION_KERNELS(T)                                                                   \
  template void RopeForward<T>(T*, int64_t, int64_t, int64_t, int64_t, double);                    \
  template void RopeBackward<T>(T*, int64_t, int64_t, int64_t, int64_t, double);                   \
  template void AttentionForward<T>(T*, T*, const T*, const T*, const T*, const AttentionShape&);  \
  template void AttentionBackward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, \
                                     const AttentionShape&);

AVF_ATTENTION_KERNELS(float)
AVF_ATTENTION_KERNELS(double)
AVF_ATTENTION_KERNELS(Bf16)

}  // namespace avf::cpu
