// Rotary embeddings, causal attention and the softmax cross-entropy (kernels.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/kernels.h"

namespace avf::cpu {

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

// Offsets of query head h and of its key/value head at batch bb, position pos.
struct HeadIndex {
  const AttentionShape& s;
  auto Q(int64_t bb, int64_t pos, int64_t h) const -> int64_t { return ((bb * s.t + pos) * s.heads + h) * s.head_dim; }
  auto KV(int64_t bb, int64_t pos, int64_t h) const -> int64_t {
    int64_t group = s.heads / s.kv_heads;
    return ((bb * s.t + pos) * s.kv_heads + h / group) * s.head_dim;
  }
  auto Att(int64_t bb, int64_t h, int64_t pos) const -> int64_t { return ((bb * s.heads + h) * s.t + pos) * s.t; }
};

template <typename T>
auto Dot(const T* a, const T* b, int64_t n) -> double {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

// One query row: probabilities over positions 0..pos, written to `row`.
template <typename T>
void SoftmaxRow(T* row, const T* q, const T* k, const HeadIndex& ix, int64_t bb, int64_t pos, int64_t h) {
  const AttentionShape& s = ix.s;
  double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  std::vector<double> scores(static_cast<size_t>(pos + 1));
  double max = -INFINITY;
  for (int64_t j = 0; j <= pos; ++j) {
    scores[j] = scale * Dot(q + ix.Q(bb, pos, h), k + ix.KV(bb, j, h), s.head_dim);
    max = std::max(max, scores[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j <= pos; ++j) sum += scores[j] = std::exp(scores[j] - max);
  for (int64_t j = 0; j < s.t; ++j) row[j] = j <= pos ? static_cast<T>(scores[j] / sum) : T(0);
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

template <typename T>
void AttentionForward(T* out, T* att, const T* q, const T* k, const T* v, const AttentionShape& s) {
  HeadIndex ix{s};
  for (int64_t bb = 0; bb < s.b; ++bb) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t pos = 0; pos < s.t; ++pos) {
        T* row = att + ix.Att(bb, h, pos);
        SoftmaxRow(row, q, k, ix, bb, pos, h);
        T* o = out + ix.Q(bb, pos, h);
        std::fill(o, o + s.head_dim, T(0));
        for (int64_t j = 0; j <= pos; ++j) {
          const T* vj = v + ix.KV(bb, j, h);
          for (int64_t d = 0; d < s.head_dim; ++d) o[d] += row[j] * vj[d];
        }
      }
    }
  }
}

template <typename T>
void AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* att, const T* q, const T* k, const T* v,
                       const AttentionShape& s) {
  HeadIndex ix{s};
  double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  std::vector<double> datt(static_cast<size_t>(s.t));
  for (int64_t bb = 0; bb < s.b; ++bb) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t pos = 0; pos < s.t; ++pos) {
        const T* row = att + ix.Att(bb, h, pos);
        const T* dy = dout + ix.Q(bb, pos, h);
        double weighted = 0;
        for (int64_t j = 0; j <= pos; ++j) {
          datt[j] = Dot(dy, v + ix.KV(bb, j, h), s.head_dim);
          weighted += row[j] * datt[j];
          T* dvj = dv + ix.KV(bb, j, h);
          for (int64_t d = 0; d < s.head_dim; ++d) dvj[d] += row[j] * dy[d];
        }
        // Softmax backward, then the scaled dot product.
        for (int64_t j = 0; j <= pos; ++j) {
          double dscore = row[j] * (datt[j] - weighted) * scale;
          const T* kj = k + ix.KV(bb, j, h);
          const T* qi = q + ix.Q(bb, pos, h);
          T* dqi = dq + ix.Q(bb, pos, h);
          T* dkj = dk + ix.KV(bb, j, h);
          for (int64_t d = 0; d < s.head_dim; ++d) {
            dqi[d] += static_cast<T>(dscore * kj[d]);
            dkj[d] += static_cast<T>(dscore * qi[d]);
          }
        }
      }
    }
  }
}

template <typename T>
void CrossEntropyForward(T* losses, T* probs, const T* logits, const uint32_t* targets, int64_t n, int64_t v) {
  for (int64_t i = 0; i < n; ++i) {
    const T* z = logits + i * v;
    double max = *std::max_element(z, z + v), sum = 0;
    for (int64_t j = 0; j < v; ++j) sum += std::exp(static_cast<double>(z[j]) - max);
    for (int64_t j = 0; j < v; ++j) probs[i * v + j] = static_cast<T>(std::exp(static_cast<double>(z[j]) - max) / sum);
    // -log softmax, from the logits: no log(0) for a vanishing probability.
    losses[i] = static_cast<T>(std::log(sum) + max - z[targets[i]]);
  }
}

template <typename T>
void CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const T* dlosses, int64_t n, int64_t v) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < v; ++j) {
      T indicator = j == static_cast<int64_t>(targets[i]) ? T(1) : T(0);
      dlogits[i * v + j] += (probs[i * v + j] - indicator) * dlosses[i];
    }
  }
}

#define AVF_ATTENTION_KERNELS(T)                                                                               \
  template void RopeForward<T>(T*, int64_t, int64_t, int64_t, int64_t, double);                               \
  template void RopeBackward<T>(T*, int64_t, int64_t, int64_t, int64_t, double);                              \
  template void AttentionForward<T>(T*, T*, const T*, const T*, const T*, const AttentionShape&);             \
  template void AttentionBackward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,            \
                                     const AttentionShape&);                                                  \
  template void CrossEntropyForward<T>(T*, T*, const T*, const uint32_t*, int64_t, int64_t);                  \
  template void CrossEntropyBackward<T>(T*, const T*, const uint32_t*, const T*, int64_t, int64_t);

AVF_ATTENTION_KERNELS(float)
AVF_ATTENTION_KERNELS(double)

}  // namespace avf::cpu
