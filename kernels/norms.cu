// LayerNorm and RMSNorm, forward and backward, and the column sums of a
// matmul's dbias (kernels.h). The forward and d(input) take one warp per row:
// each lane sums a strided part of the row, then the warp adds the lanes.
// The sums over rows (dweight, dbias, column sums) run in two phases without
// atomics: each chunk of kRowChunk rows is summed per column, in row order,
// into the fp32 workspace; then each column's chunk sums are added in chunk
// order and into the gradient with one rounding. Every sum is fp32.
#include <cmath>

#include "kernels/device.cuh"
#include "kernels/kernels.h"

namespace avf::kernels {

namespace {

using device::GlobalThread;
using device::GridStride;
using device::kWarp;
using device::Load;
using device::Store;
using device::WarpSum;

constexpr float kEps = static_cast<float>(1e-5);
constexpr int64_t kRowChunk = 256;
constexpr int kRowsPerBlock = device::kBlock / kWarp;

__host__ __device__ __forceinline__ auto Chunks(int64_t n) -> int64_t { return (n + kRowChunk - 1) / kRowChunk; }

// A warp's first row and the grid's stride in rows, for a loop of one warp per row.
__device__ __forceinline__ auto WarpRow() -> int64_t { return GlobalThread() / kWarp; }
__device__ __forceinline__ auto WarpStride() -> int64_t { return GridStride() / kWarp; }
__device__ __forceinline__ auto Lane() -> int { return static_cast<int>(threadIdx.x) % kWarp; }

// ---- the column sums over rows ----

// partial(chunks x C): each chunk of kRowChunk rows of rows(N x C) summed per column.
template <typename T>
__global__ void column_partials_kernel(float* partial, const T* rows, int64_t n, int64_t c) {
  for (int64_t idx = GlobalThread(); idx < Chunks(n) * c; idx += GridStride()) {
    int64_t r0 = idx / c * kRowChunk, r1 = r0 + kRowChunk < n ? r0 + kRowChunk : n, j = idx % c;
    float sum = 0.0f;
    for (int64_t i = r0; i < r1; ++i) sum += Load(rows[i * c + j]);
    partial[idx] = sum;
  }
}

// partial_w(chunks x C), per chunk of rows: the column sums of (in - mean)
// rstd dout (mean null: 0, RMSNorm), and in partial_b (unless null) of dout;
// in, dout (N x C), mean, rstd (N).
template <typename T>
__global__ void norm_partials_kernel(float* partial_w, float* partial_b, const T* dout, const T* in, const float* mean,
                                     const float* rstd, int64_t n, int64_t c) {
  for (int64_t idx = GlobalThread(); idx < Chunks(n) * c; idx += GridStride()) {
    int64_t r0 = idx / c * kRowChunk, r1 = r0 + kRowChunk < n ? r0 + kRowChunk : n, j = idx % c;
    float dw = 0.0f, db = 0.0f;
    for (int64_t i = r0; i < r1; ++i) {
      float g = Load(dout[i * c + j]), m = mean != nullptr ? mean[i] : 0.0f;
      dw += (Load(in[i * c + j]) - m) * rstd[i] * g;
      db += g;
    }
    partial_w[idx] = dw;
    if (partial_b != nullptr) partial_b[idx] = db;
  }
}

// dst(C) += the sum of partial(chunks x C) over chunks, in order.
template <typename T>
__global__ void add_chunk_sums_kernel(T* dst, const float* partial, int64_t chunks, int64_t c) {
  for (int64_t j = GlobalThread(); j < c; j += GridStride()) {
    float sum = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) sum += partial[k * c + j];
    device::AddTo(dst[j], sum);
  }
}

template <typename T>
void LaunchAddChunkSums(T* dst, const float* partial, int64_t chunks, int64_t c, cudaStream_t stream) {
  add_chunk_sums_kernel<<<device::Blocks(c), device::kBlock, 0, stream>>>(dst, partial, chunks, c);
}

// ---- LayerNorm ----

// out(N x C) = (in - mean) rstd weight(C) + bias(C) per row, the variance
// about the mean (two passes); mean(N) and rstd(N) kept.
template <typename T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* in, const T* weight, const T* bias,
                                         int64_t n, int64_t c) {
  for (int64_t row = WarpRow(); row < n; row += WarpStride()) {
    const T* x = in + row * c;
    T* y = out + row * c;
    float sum = 0.0f, var = 0.0f;
    for (int64_t j = Lane(); j < c; j += kWarp) sum += Load(x[j]);
    float m = WarpSum(sum) / static_cast<float>(c);
    for (int64_t j = Lane(); j < c; j += kWarp) {
      float d = Load(x[j]) - m;
      var += d * d;
    }
    float r = 1.0f / sqrtf(WarpSum(var) / static_cast<float>(c) + kEps);
    for (int64_t j = Lane(); j < c; j += kWarp) {
      y[j] = Store<T>((Load(x[j]) - m) * r * Load(weight[j]) + Load(bias[j]));
    }
    if (Lane() == 0) {
      mean[row] = m;
      rstd[row] = r;
    }
  }
}

// din(N x C) += rstd (dnorm - mean(dnorm) - norm mean(dnorm norm)) per row,
// dnorm = weight(C) dout, norm = (in - mean) rstd.
template <typename T>
__global__ void layernorm_backward_kernel(T* din, const T* dout, const T* in, const T* weight, const float* mean,
                                          const float* rstd, int64_t n, int64_t c) {
  for (int64_t row = WarpRow(); row < n; row += WarpStride()) {
    const T* x = in + row * c;
    const T* dy = dout + row * c;
    T* dx = din + row * c;
    float m = mean[row], r = rstd[row], dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
    for (int64_t j = Lane(); j < c; j += kWarp) {
      float dnorm = Load(weight[j]) * Load(dy[j]);
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * (Load(x[j]) - m) * r;
    }
    float dnorm_mean = WarpSum(dnorm_sum) / static_cast<float>(c);
    float dnorm_norm_mean = WarpSum(dnorm_norm_sum) / static_cast<float>(c);
    for (int64_t j = Lane(); j < c; j += kWarp) {
      float norm = (Load(x[j]) - m) * r;
      float dnorm = Load(weight[j]) * Load(dy[j]);
      dx[j] = Store<T>(Load(dx[j]) + r * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
    }
  }
}

// ---- RMSNorm ----

// out(N x C) = in rstd weight(C), rstd = 1 / sqrt(mean(in^2) + eps) kept in rstd(N).
template <typename T>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* in, const T* weight, int64_t n, int64_t c) {
  for (int64_t row = WarpRow(); row < n; row += WarpStride()) {
    const T* x = in + row * c;
    T* y = out + row * c;
    float squares = 0.0f;
    for (int64_t j = Lane(); j < c; j += kWarp) squares += Load(x[j]) * Load(x[j]);
    float r = 1.0f / sqrtf(WarpSum(squares) / static_cast<float>(c) + kEps);
    for (int64_t j = Lane(); j < c; j += kWarp) y[j] = Store<T>(Load(x[j]) * r * Load(weight[j]));
    if (Lane() == 0) rstd[row] = r;
  }
}

// din(N x C) += rstd weight(C) dout - in rstd^3 (sum of weight dout in) / C per row.
template <typename T>
__global__ void rmsnorm_backward_kernel(T* din, const T* dout, const T* in, const T* weight, const float* rstd,
                                        int64_t n, int64_t c) {
  for (int64_t row = WarpRow(); row < n; row += WarpStride()) {
    const T* x = in + row * c;
    const T* dy = dout + row * c;
    T* dx = din + row * c;
    float r = rstd[row], dot = 0.0f;
    for (int64_t j = Lane(); j < c; j += kWarp) dot += Load(weight[j]) * Load(dy[j]) * Load(x[j]);
    float x_scale = r * r * r * WarpSum(dot) / static_cast<float>(c);
    for (int64_t j = Lane(); j < c; j += kWarp) {
      dx[j] = Store<T>(Load(dx[j]) + r * Load(weight[j]) * Load(dy[j]) - Load(x[j]) * x_scale);
    }
  }
}

auto RowBlocks(int64_t n) -> unsigned { return device::Blocks(n, kRowsPerBlock); }

}  // namespace

auto ColumnSumsWorkspaceBytes(int64_t n, int64_t c) -> size_t {
  if (n < 0 || c < 0) return 0;
  return static_cast<size_t>(Chunks(n) * c) * sizeof(float);
}

template <typename T>
auto AddColumnSums(T* dsum, const T* rows, int64_t n, int64_t c, void* workspace, cudaStream_t stream) -> cudaError_t {
  auto* partial = static_cast<float*>(workspace);
  int64_t chunks = Chunks(n);
  return device::Run({n, c}, n * c, [&] {
    column_partials_kernel<<<device::Blocks(chunks * c), device::kBlock, 0, stream>>>(partial, rows, n, c);
    LaunchAddChunkSums(dsum, partial, chunks, c, stream);
  });
}

// The partial sums of dweight, then of dbias (LayerNorm).
auto NormBackwardWorkspaceBytes(int64_t n, int64_t c) -> size_t { return 2 * ColumnSumsWorkspaceBytes(n, c); }

template <typename T>
auto LayerNormForward(T* out, Wide<T>* mean, Wide<T>* rstd, const T* in, const T* weight, const T* bias, int64_t n,
                      int64_t c, cudaStream_t stream) -> cudaError_t {
  return device::Run({n, c}, n * c, [&] {
    layernorm_forward_kernel<<<RowBlocks(n), device::kBlock, 0, stream>>>(out, mean, rstd, in, weight, bias, n, c);
  });
}

template <typename T>
auto LayerNormBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const Wide<T>* mean,
                       const Wide<T>* rstd, int64_t n, int64_t c, void* workspace, cudaStream_t stream) -> cudaError_t {
  int64_t chunks = Chunks(n);
  float* partial_w = static_cast<float*>(workspace);
  float* partial_b = dbias != nullptr ? partial_w + chunks * c : nullptr;
  return device::Run({n, c}, n * c, [&] {
    layernorm_backward_kernel<<<RowBlocks(n), device::kBlock, 0, stream>>>(din, dout, in, weight, mean, rstd, n, c);
    norm_partials_kernel<<<device::Blocks(chunks * c), device::kBlock, 0, stream>>>(partial_w, partial_b, dout, in,
                                                                                    mean, rstd, n, c);
    LaunchAddChunkSums(dweight, partial_w, chunks, c, stream);
    if (dbias != nullptr) LaunchAddChunkSums(dbias, partial_b, chunks, c, stream);
  });
}

template <typename T>
auto RmsNormForward(T* out, Wide<T>* rstd, const T* in, const T* weight, int64_t n, int64_t c, cudaStream_t stream)
    -> cudaError_t {
  return device::Run({n, c}, n * c, [&] {
    rmsnorm_forward_kernel<<<RowBlocks(n), device::kBlock, 0, stream>>>(out, rstd, in, weight, n, c);
  });
}

template <typename T>
auto RmsNormBackward(T* din, T* dweight, const T* dout, const T* in, const T* weight, const Wide<T>* rstd, int64_t n,
                     int64_t c, void* workspace, cudaStream_t stream) -> cudaError_t {
  int64_t chunks = Chunks(n);
  auto* partial = static_cast<float*>(workspace);
  return device::Run({n, c}, n * c, [&] {
    rmsnorm_backward_kernel<<<RowBlocks(n), device::kBlock, 0, stream>>>(din, dout, in, weight, rstd, n, c);
    norm_partials_kernel<<<device::Blocks(chunks * c), device::kBlock, 0, stream>>>(partial, nullptr, dout, in, nullptr,
                                                                                    rstd, n, c);
    LaunchAddChunkSums(dweight, partial, chunks, c, stream);
  });
}

#define AVF_NORM_KERNELS(T)                                                                                       \
  template auto AddColumnSums<T>(T*, const T*, int64_t, int64_t, void*, cudaStream_t)->cudaError_t;               \
  template auto LayerNormForward<T>(T*, Wide<T>*, Wide<T>*, const T*, const T*, const T*, int64_t, int64_t,       \
                                    cudaStream_t)                                                                 \
      ->cudaError_t;                                                                                              \
  template auto LayerNormBackward<T>(T*, T*, T*, const T*, const T*, const T*, const Wide<T>*, const Wide<T>*,    \
                                     int64_t, int64_t, void*, cudaStream_t)                                       \
      ->cudaError_t;                                                                                              \
  template auto RmsNormForward<T>(T*, Wide<T>*, const T*, const T*, int64_t, int64_t, cudaStream_t)->cudaError_t; \
  template auto RmsNormBackward<T>(T*, T*, const T*, const T*, const T*, const Wide<T>*, int64_t, int64_t, void*, \
                                   cudaStream_t)                                                                  \
      ->cudaError_t;

AVF_NORM_KERNELS(float)
AVF_NORM_KERNELS(Bf16)

}  // namespace avf::kernels
