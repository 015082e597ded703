// The softmax cross-entropy over a (vocab-parallel) shard of the logits, in
// the CPU's parts (kernels.h): one block per row (a grid-stride loop over
// rows), each thread taking a strided part of the row and the block reducing
// the threads' values in a fixed order. The statistics are fp32; for bf16 the
// probabilities are rounded twice, as on the CPU (the unnormalised values wait
// in `probs` while the tensor group sums the rows).
#include <cmath>

#include "kernels/device.cuh"
#include "kernels/kernels.h"

namespace avf::kernels {

namespace {

using device::GlobalThread;
using device::GridStride;
using device::kBlock;
using device::kWarp;
using device::Load;
using device::Store;

auto RowBlocks(int64_t n) -> unsigned { return static_cast<unsigned>(std::min(n, device::kMaxBlocks)); }

// row_max(N) = the max of each row of logits(N x V), NaNs skipped (fmaxf);
// target_logit(N) = the row's logit at targets(N) - vocab_first, 0 when that
// is outside the shard.
template <typename T>
__global__ void cross_entropy_stats_kernel(float* row_max, float* target_logit, const T* logits,
                                           const uint32_t* targets, int64_t n, int64_t v, int64_t vocab_first) {
  __shared__ float shared[kWarp];
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    const T* z = logits + row * v;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) m = fmaxf(m, Load(z[j]));
    m = device::BlockMax(m, shared);
    if (threadIdx.x == 0) {
      row_max[row] = m;
      int64_t target = static_cast<int64_t>(targets[row]) - vocab_first;
      target_logit[row] = target >= 0 && target < v ? Load(z[target]) : 0.0f;
    }
  }
}

// probs(N x V) = e^(logits - row_max(N)), rounded; row_sum(N) = the sum of
// the exponentials before rounding.
template <typename T>
__global__ void cross_entropy_softmax_kernel(T* probs, float* row_sum, const T* logits, const float* row_max, int64_t n,
                                             int64_t v) {
  __shared__ float shared[kWarp];
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    const T* z = logits + row * v;
    T* p = probs + row * v;
    float m = row_max[row], sum = 0.0f;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
      float e = expf(Load(z[j]) - m);
      p[j] = Store<T>(e);
      sum += e;
    }
    sum = device::BlockSum(sum, shared);
    if (threadIdx.x == 0) row_sum[row] = sum;
  }
}

// probs(N x V) *= 1 / row_sum(N); losses(N) = log(row_sum) + row_max - target_logit.
template <typename T>
__global__ void cross_entropy_finish_kernel(float* losses, T* probs, const float* row_sum, const float* row_max,
                                            const float* target_logit, int64_t n, int64_t v) {
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    T* p = probs + row * v;
    float scale = 1.0f / row_sum[row];
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) p[j] = Store<T>(Load(p[j]) * scale);
    if (threadIdx.x == 0) losses[row] = logf(row_sum[row]) + row_max[row] - target_logit[row];
  }
}

// dlogits(N x V) += probs dlosses(N), and at the row's target (if in the
// shard) also -dloss, each element rounded once.
template <typename T>
__global__ void cross_entropy_backward_kernel(T* dlogits, const T* probs, const uint32_t* targets, const float* dlosses,
                                              int64_t n, int64_t v, int64_t vocab_first) {
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    T* dz = dlogits + row * v;
    const T* p = probs + row * v;
    float dloss = dlosses[row];
    int64_t target = static_cast<int64_t>(targets[row]) - vocab_first;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
      float d = Load(dz[j]) + Load(p[j]) * dloss;
      if (j == target) d -= dloss;
      dz[j] = Store<T>(d);
    }
  }
}

// out(count) = the max over b of blocks(nblocks x count)[b], as std::max in
// order (a NaN in the first block is kept, a later one skipped).
__global__ void max_over_blocks_kernel(float* out, const float* blocks, int64_t count, int64_t nblocks) {
  for (int64_t i = GlobalThread(); i < count; i += GridStride()) {
    float m = blocks[i];
    for (int64_t b = 1; b < nblocks; ++b) {
      float x = blocks[b * count + i];
      m = m < x ? x : m;
    }
    out[i] = m;
  }
}

}  // namespace

template <typename T>
auto CrossEntropyStats(Wide<T>* row_max, Wide<T>* target_logit, const T* logits, const uint32_t* targets, int64_t n,
                       int64_t v, int64_t vocab_first, cudaStream_t stream) -> cudaError_t {
  return device::Run({n, v, vocab_first}, n, [&] {
    cross_entropy_stats_kernel<<<RowBlocks(n), kBlock, 0, stream>>>(row_max, target_logit, logits, targets, n, v,
                                                                    vocab_first);
  });
}

template <typename T>
auto CrossEntropySoftmax(T* probs, Wide<T>* row_sum, const T* logits, const Wide<T>* row_max, int64_t n, int64_t v,
                         cudaStream_t stream) -> cudaError_t {
  return device::Run({n, v}, n, [&] {
    cross_entropy_softmax_kernel<<<RowBlocks(n), kBlock, 0, stream>>>(probs, row_sum, logits, row_max, n, v);
  });
}

template <typename T>
auto CrossEntropyFinish(Wide<T>* losses, T* probs, const Wide<T>* row_sum, const Wide<T>* row_max,
                        const Wide<T>* target_logit, int64_t n, int64_t v, cudaStream_t stream) -> cudaError_t {
  return device::Run({n, v}, n, [&] {
    cross_entropy_finish_kernel<<<RowBlocks(n), kBlock, 0, stream>>>(losses, probs, row_sum, row_max, target_logit, n,
                                                                     v);
  });
}

template <typename T>
auto CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const Wide<T>* dlosses, int64_t n,
                          int64_t v, int64_t vocab_first, cudaStream_t stream) -> cudaError_t {
  return device::Run({n, v, vocab_first}, n * v, [&] {
    cross_entropy_backward_kernel<<<RowBlocks(n), kBlock, 0, stream>>>(dlogits, probs, targets, dlosses, n, v,
                                                                       vocab_first);
  });
}

auto MaxOverBlocks(float* out, const float* blocks, int64_t count, int64_t nblocks, cudaStream_t stream)
    -> cudaError_t {
  return device::Run({count, nblocks}, nblocks == 0 ? 0 : count, [&] {
    max_over_blocks_kernel<<<device::Blocks(count), kBlock, 0, stream>>>(out, blocks, count, nblocks);
  });
}

#define AVF_CROSS_ENTROPY_KERNELS(T)                                                                                  \
  template auto CrossEntropyStats<T>(Wide<T>*, Wide<T>*, const T*, const uint32_t*, int64_t, int64_t, int64_t,        \
                                     cudaStream_t)                                                                    \
      ->cudaError_t;                                                                                                  \
  template auto CrossEntropySoftmax<T>(T*, Wide<T>*, const T*, const Wide<T>*, int64_t, int64_t, cudaStream_t)        \
      ->cudaError_t;                                                                                                  \
  template auto CrossEntropyFinish<T>(Wide<T>*, T*, const Wide<T>*, const Wide<T>*, const Wide<T>*, int64_t, int64_t, \
                                      cudaStream_t)                                                                   \
      ->cudaError_t;                                                                                                  \
  template auto CrossEntropyBackward<T>(T*, const T*, const uint32_t*, const Wide<T>*, int64_t, int64_t, int64_t,     \
                                        cudaStream_t)                                                                 \
      ->cudaError_t;

AVF_CROSS_ENTROPY_KERNELS(float)
AVF_CROSS_ENTROPY_KERNELS(Bf16)

}  // namespace avf::kernels
