// LayerNorm and RMSNorm, forward and backward (kernels.h). Rows are
// independent in the forward and in d(input), so threads take rows; the
// weight and bias gradients sum over rows, so threads take blocks of columns
// and sum each in row order (the same result on any thread count). Every sum
// and statistic is in Wide<T>; each output is rounded once.
#include <algorithm>
#include <cmath>

#include "cpu/kernels.h"
#include "cpu/vector_math.h"

namespace avf::cpu {

using backend::Bf16;
using backend::Narrow;
using backend::Widen;
using detail::AddWide;
using detail::kParallelMin;

namespace {

constexpr double kEps = 1e-5;

// dweight[j] += sum over rows i of (in[i][j] - mean[i]) rstd[i] dout[i][j],
// and dbias[j] += sum over i of dout[i][j]. RMSNorm passes no mean (0) and
// no dbias.
template <typename T>
void NormParamGrads(T* dweight, T* dbias, const T* dout, const T* in, const Wide<T>* mean, const Wide<T>* rstd,
                    int64_t n, int64_t c) {
  using W = Wide<T>;
  constexpr int64_t kBlock = 64;
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t j0 = 0; j0 < c; j0 += kBlock) {
    int64_t width = std::min(kBlock, c - j0);
    W dw[kBlock] = {}, db[kBlock] = {};
    for (int64_t i = 0; i < n; ++i) {
      const T* x = in + i * c + j0;
      const T* dy = dout + i * c + j0;
      W m = mean ? mean[i] : W(0), r = rstd[i];
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) {
        W g = Widen(dy[j]);
        dw[j] += (Widen(x[j]) - m) * r * g;
        db[j] += g;
      }
    }
    AddWide(dweight + j0, dw, width);
    if (dbias) AddWide(dbias + j0, db, width);
  }
}

}  // namespace

// Per row: mean, variance about the mean (two passes), rstd = 1/sqrt(var + eps).
template <typename T>
void LayerNormForward(T* out, Wide<T>* mean, Wide<T>* rstd, const T* in, const T* weight, const T* bias, int64_t n,
                      int64_t c) {
  using W = Wide<T>;
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* x = in + i * c;
    T* y = out + i * c;
    W sum = 0, var = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < c; ++j) sum += Widen(x[j]);
    W m = sum / W(c);
#pragma omp simd reduction(+ : var)
    for (int64_t j = 0; j < c; ++j) {
      W d = Widen(x[j]) - m;
      var += d * d;
    }
    W r = W(1) / std::sqrt(var / W(c) + W(kEps));
#pragma omp simd
    for (int64_t j = 0; j < c; ++j) y[j] = Narrow<T>((Widen(x[j]) - m) * r * Widen(weight[j]) + Widen(bias[j]));
    mean[i] = m;
    rstd[i] = r;
  }
}

// din = rstd (dnorm - mean(dnorm) - norm mean(dnorm norm)), dnorm = weight dout.
template <typename T>
void LayerNormBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const Wide<T>* mean,
                       const Wide<T>* rstd, int64_t n, int64_t c) {
  using W = Wide<T>;
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* x = in + i * c;
    const T* dy = dout + i * c;
    T* dx = din + i * c;
    W m = mean[i], r = rstd[i], dnorm_sum = 0, dnorm_norm_sum = 0;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
    for (int64_t j = 0; j < c; ++j) {
      W dnorm = Widen(weight[j]) * Widen(dy[j]);
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * (Widen(x[j]) - m) * r;
    }
    W dnorm_mean = dnorm_sum / W(c), dnorm_norm_mean = dnorm_norm_sum / W(c);
#pragma omp simd
    for (int64_t j = 0; j < c; ++j) {
      W norm = (Widen(x[j]) - m) * r;
      W dnorm = Widen(weight[j]) * Widen(dy[j]);
      dx[j] = Narrow<T>(Widen(dx[j]) + r * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
    }
  }
  NormParamGrads(dweight, dbias, dout, in, mean, rstd, n, c);
}

template <typename T>
void RmsNormForward(T* out, Wide<T>* rstd, const T* in, const T* weight, int64_t n, int64_t c) {
  using W = Wide<T>;
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* x = in + i * c;
    T* y = out + i * c;
    W squares = 0;
#pragma omp simd reduction(+ : squares)
    for (int64_t j = 0; j < c; ++j) squares += Widen(x[j]) * Widen(x[j]);
    W r = W(1) / std::sqrt(squares / W(c) + W(kEps));
#pragma omp simd
    for (int64_t j = 0; j < c; ++j) y[j] = Narrow<T>(Widen(x[j]) * r * Widen(weight[j]));
    rstd[i] = r;
  }
}

// din = rstd weight dout - x rstd^3 (sum of weight dout x) / C.
template <typename T>
void RmsNormBackward(T* din, T* dweight, const T* dout, const T* in, const T* weight, const Wide<T>* rstd, int64_t n,
                     int64_t c) {
  using W = Wide<T>;
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* x = in + i * c;
    const T* dy = dout + i * c;
    T* dx = din + i * c;
    W r = rstd[i], dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < c; ++j) dot += Widen(weight[j]) * Widen(dy[j]) * Widen(x[j]);
    W x_scale = r * r * r * dot / W(c);
#pragma omp simd
    for (int64_t j = 0; j < c; ++j) {
      dx[j] = Narrow<T>(Widen(dx[j]) + r * Widen(weight[j]) * Widen(dy[j]) - Widen(x[j]) * x_scale);
    }
  }
  NormParamGrads<T>(dweight, nullptr, dout, in, nullptr, rstd, n, c);
}

#define AVF_NORM_KERNELS(T)                                                                                    \
  template void LayerNormForward<T>(T*, Wide<T>*, Wide<T>*, const T*, const T*, const T*, int64_t, int64_t);   \
  template void LayerNormBackward<T>(T*, T*, T*, const T*, const T*, const T*, const Wide<T>*, const Wide<T>*, \
                                     int64_t, int64_t);                                                        \
  template void RmsNormForward<T>(T*, Wide<T>*, const T*, const T*, int64_t, int64_t);                         \
  template void RmsNormBackward<T>(T*, T*, const T*, const T*, const T*, const Wide<T>*, int64_t, int64_t);

AVF_NORM_KERNELS(float)
AVF_NORM_KERNELS(double)
AVF_NORM_KERNELS(Bf16)

}  // namespace avf::cpu
