// Matmul, embedding, norms, activations and residual (kernels.h).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/gemm.h"
#include "cpu/kernels.h"

namespace avf::cpu {

namespace {

constexpr double kEps = 1e-5;

// Loops shorter than this run on one thread: starting the team costs more.
constexpr int64_t kParallelMin = 1 << 14;

// sums[j] += column j of rows(n x c), each column summed in row order (the
// same result on any thread count); threads take blocks of columns.
template <typename T>
void ColumnSums(T* sums, const T* rows, int64_t n, int64_t c) {
  constexpr int64_t kBlock = 64;
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t j0 = 0; j0 < c; j0 += kBlock) {
    int64_t j1 = std::min(c, j0 + kBlock);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = j0; j < j1; ++j) sums[j] += rows[i * c + j];
    }
  }
}

constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)

}  // namespace

using detail::Gemm;

template <typename T>
void MatmulForward(T* out, const T* in, const T* weight, const T* bias, int64_t n, int64_t c, int64_t oc) {
  Gemm(false, true, n, oc, c, T(1), in, c, weight, c, T(0), out, oc);
  if (!bias) return;
#pragma omp parallel for if (n * oc >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o = 0; o < oc; ++o) out[i * oc + o] += bias[o];
  }
}

template <typename T>
void MatmulBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, int64_t n, int64_t c,
                    int64_t oc) {
  if (din) Gemm(false, false, n, c, oc, T(1), dout, oc, weight, c, T(1), din, c);
  Gemm(true, false, oc, c, n, T(1), dout, oc, in, c, T(1), dweight, c);
  if (!dbias) return;
  ColumnSums(dbias, dout, n, oc);
}

template <typename T>
void EmbeddingForward(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t b, int64_t t, int64_t c,
                      int64_t vocab_first, int64_t vocab_count) {
#pragma omp parallel for if (b * t * c >= kParallelMin)
  for (int64_t i = 0; i < b * t; ++i) {
    int64_t row = static_cast<int64_t>(tokens[i]) - vocab_first;
    const T* e = row >= 0 && row < vocab_count ? wte + row * c : nullptr;
    const T* p = wpe ? wpe + (i % t) * c : nullptr;
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = (e ? e[j] : T(0)) + (p ? p[j] : T(0));
  }
}

template <typename T>
void EmbeddingBackward(T* dwte, T* dwpe, const T* dout, const uint32_t* tokens, int64_t b, int64_t t, int64_t c,
                       int64_t vocab_first, int64_t vocab_count) {
  for (int64_t i = 0; i < b * t; ++i) {
    int64_t row = static_cast<int64_t>(tokens[i]) - vocab_first;
    T* e = row >= 0 && row < vocab_count ? dwte + row * c : nullptr;
    T* p = dwpe ? dwpe + (i % t) * c : nullptr;
    for (int64_t j = 0; j < c; ++j) {
      if (e) e[j] += dout[i * c + j];
      if (p) p[j] += dout[i * c + j];
    }
  }
}

template <typename T>
void LayerNormForward(T* out, Wide<T>* mean, Wide<T>* rstd, const T* in, const T* weight, const T* bias, int64_t n,
                      int64_t c) {
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* x = in + i * c;
    double m = 0, var = 0;
    for (int64_t j = 0; j < c; ++j) m += x[j];
    m /= static_cast<double>(c);
    for (int64_t j = 0; j < c; ++j) var += (x[j] - m) * (x[j] - m);
    double r = 1.0 / std::sqrt(var / static_cast<double>(c) + kEps);
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = static_cast<T>((x[j] - m) * r) * weight[j] + bias[j];
    mean[i] = static_cast<T>(m);
    rstd[i] = static_cast<T>(r);
  }
}

template <typename T>
void LayerNormBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const Wide<T>* mean,
                       const Wide<T>* rstd, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    const T* x = in + i * c;
    const T* dy = dout + i * c;
    double dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int64_t j = 0; j < c; ++j) {
      double norm = (x[j] - mean[i]) * rstd[i];
      double dnorm = static_cast<double>(weight[j]) * dy[j];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= static_cast<double>(c);
    dnorm_norm_mean /= static_cast<double>(c);
    for (int64_t j = 0; j < c; ++j) {
      double norm = (x[j] - mean[i]) * rstd[i];
      double dnorm = static_cast<double>(weight[j]) * dy[j];
      dbias[j] += dy[j];
      dweight[j] += static_cast<T>(norm * dy[j]);
      din[i * c + j] += static_cast<T>(rstd[i] * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
    }
  }
}

template <typename T>
void RmsNormForward(T* out, Wide<T>* rstd, const T* in, const T* weight, int64_t n, int64_t c) {
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* x = in + i * c;
    double ss = 0;
    for (int64_t j = 0; j < c; ++j) ss += static_cast<double>(x[j]) * x[j];
    double r = 1.0 / std::sqrt(ss / static_cast<double>(c) + kEps);
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = static_cast<T>(x[j] * r) * weight[j];
    rstd[i] = static_cast<T>(r);
  }
}

template <typename T>
void RmsNormBackward(T* din, T* dweight, const T* dout, const T* in, const T* weight, const Wide<T>* rstd, int64_t n,
                     int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    const T* x = in + i * c;
    const T* dy = dout + i * c;
    double r = rstd[i], dot = 0;
    for (int64_t j = 0; j < c; ++j) dot += static_cast<double>(weight[j]) * dy[j] * x[j];
    for (int64_t j = 0; j < c; ++j) {
      dweight[j] += static_cast<T>(dy[j] * x[j] * r);
      double dnorm = static_cast<double>(weight[j]) * dy[j];
      din[i * c + j] += static_cast<T>(r * dnorm - x[j] * r * r * r * dot / static_cast<double>(c));
    }
  }
}

template <typename T>
void GeluForward(T* out, const T* in, int64_t n) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    double x = in[i];
    out[i] = static_cast<T>(0.5 * x * (1.0 + std::tanh(kGeluScale * (x + 0.044715 * x * x * x))));
  }
}

template <typename T>
void GeluBackward(T* din, const T* in, const T* dout, int64_t n) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    double x = in[i];
    double u = kGeluScale * (x + 0.044715 * x * x * x);
    double th = std::tanh(u);
    double du = kGeluScale * (1.0 + 3.0 * 0.044715 * x * x);
    double grad = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
    din[i] += static_cast<T>(grad * dout[i]);
  }
}

template <typename T>
void SwigluForward(T* out, const T* gate, const T* up, int64_t n) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    double g = gate[i];
    out[i] = static_cast<T>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

template <typename T>
void SwigluBackward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    double g = gate[i];
    double s = 1.0 / (1.0 + std::exp(-g));
    dup[i] += static_cast<T>(g * s * dout[i]);
    dgate[i] += static_cast<T>(up[i] * (s + g * s * (1.0 - s)) * dout[i]);
  }
}

template <typename T>
void ResidualForward(T* out, const T* a, const T* b, int64_t n) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void ResidualBackward(T* da, T* db, const T* dout, int64_t n) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

#define AVF_DENSE_KERNELS(T)                                                                                          \
  template void MatmulForward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t);                        \
  template void MatmulBackward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t);               \
  template void EmbeddingForward<T>(T*, const uint32_t*, const T*, const T*, int64_t, int64_t, int64_t, int64_t,      \
                                    int64_t);                                                                         \
  template void EmbeddingBackward<T>(T*, T*, const T*, const uint32_t*, int64_t, int64_t, int64_t, int64_t, int64_t); \
  template void LayerNormForward<T>(T*, Wide<T>*, Wide<T>*, const T*, const T*, const T*, int64_t, int64_t);          \
  template void LayerNormBackward<T>(T*, T*, T*, const T*, const T*, const T*, const Wide<T>*, const Wide<T>*,        \
                                     int64_t, int64_t);                                                               \
  template void RmsNormForward<T>(T*, Wide<T>*, const T*, const T*, int64_t, int64_t);                                \
  template void RmsNormBackward<T>(T*, T*, const T*, const T*, const T*, const Wide<T>*, int64_t, int64_t);           \
  template void GeluForward<T>(T*, const T*, int64_t);                                                                \
  template void GeluBackward<T>(T*, const T*, const T*, int64_t);                                                     \
  template void SwigluForward<T>(T*, const T*, const T*, int64_t);                                                    \
  template void SwigluBackward<T>(T*, T*, const T*, const T*, const T*, int64_t);                                     \
  template void ResidualForward<T>(T*, const T*, const T*, int64_t);                                                  \
  template void ResidualBackward<T>(T*, T*, const T*, int64_t);

AVF_DENSE_KERNELS(float)
AVF_DENSE_KERNELS(double)

}  // namespace avf::cpu
