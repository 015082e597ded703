// The step's work on flat buffers (kernels.h): the squared norm of the
// counted gradient elements, the gradient's scaling and the fused AdamW
// update. The norm runs without atomics in two kernels: a fixed grid of at
// most kNormBlocks blocks, each over a contiguous range of the counted
// elements (the runs seen end to end), each square exact in double and
// summed per thread, then over the block in a fixed tree, into the
// workspace; then one block adds the blocks' sums in order. The geometry
// depends on `counted` alone, so the result is the same bits on every
// device and run. Scale and AdamW are one thread per element, grid-stride.
#include <algorithm>

#include "kernels/device.cuh"
#include "kernels/kernels.h"

namespace avf::kernels {

namespace {

using device::GlobalThread;
using device::GridStride;
using device::kBlock;
using device::Load;
using device::Store;

constexpr int kNormBlocks = 1024;  // the most partial sums, whatever the device

// One block per kBlock counted elements, at most kNormBlocks.
auto NormBlocks(int64_t counted) -> int {
  return static_cast<int>(std::min<int64_t>(kNormBlocks, (counted + kBlock - 1) / kBlock));
}

// The index of the last run of runs(run_count) with before <= k (0 if none).
__device__ __forceinline__ auto RunAt(const DeviceRun* runs, int64_t run_count, int64_t k) -> int64_t {
  int64_t lo = 0, hi = run_count;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (runs[mid].before <= k) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The sum of x over the block's threads (a power of two of them) in a fixed
// tree order, to thread 0; `shared` holds blockDim.x doubles.
__device__ __forceinline__ auto BlockSumInOrder(double x, double* shared) -> double {
  auto t = static_cast<int>(threadIdx.x);
  shared[t] = x;
  __syncthreads();
  for (int half = static_cast<int>(blockDim.x) / 2; half > 0; half /= 2) {
    if (t < half) shared[t] += shared[t + half];
    __syncthreads();
  }
  return shared[0];
}

// partials(nblocks): block b sums x[i]^2 over the counted indices k in
// [b per, (b + 1) per), per = ceil(counted / nblocks), where k lies in the
// run r with before <= k < before + count and i = first + k - before. The
// block walks the runs together; each thread takes every kBlock-th element.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    squared_norm_kernel(double* partials, const T* x, const DeviceRun* runs, int64_t run_count, int64_t counted) {
  __shared__ double shared[kBlock];
  int64_t per = (counted + gridDim.x - 1) / gridDim.x;
  int64_t k = blockIdx.x * per, end = k + per < counted ? k + per : counted;
  double sum = 0.0;
  for (int64_t r = RunAt(runs, run_count, k); k < end && r < run_count; ++r) {
    DeviceRun run = runs[r];
    int64_t stop = run.before + run.count < end ? run.before + run.count : end;
    const T* xr = x + run.first + (k - run.before);
#pragma unroll 4
    for (int64_t j = threadIdx.x; j < stop - k; j += kBlock) {
      double g = Load(xr[j]);
      sum += g * g;
    }
    if (stop > k) k = stop;
  }
  sum = BlockSumInOrder(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// out(1) = the sum of partials(nblocks) in index order (nblocks <=
// kNormBlocks; 0 when none), by one block.
__global__ void __launch_bounds__(kBlock) sum_partials_kernel(double* out, const double* partials, int nblocks) {
  __shared__ double shared[kNormBlocks];
  for (int b = static_cast<int>(threadIdx.x); b < nblocks; b += kBlock) shared[b] = partials[b];
  __syncthreads();
  if (threadIdx.x != 0) return;
  double sum = 0.0;
  for (int b = 0; b < nblocks; ++b) sum += shared[b];
  *out = sum;
}

}  // namespace

auto SquaredNormWorkspaceBytes() -> size_t { return kNormBlocks * sizeof(double); }

template <typename T>
auto SquaredNorm(double* out, const T* x, const DeviceRun* runs, int64_t run_count, int64_t counted, void* workspace,
                 cudaStream_t stream) -> cudaError_t {
  if (counted > 0 && run_count == 0) return cudaErrorInvalidValue;
  auto* partials = static_cast<double*>(workspace);
  return device::Run({run_count, counted}, 1, [&] {
    int nblocks = NormBlocks(counted);
    if (nblocks > 0) squared_norm_kernel<<<nblocks, kBlock, 0, stream>>>(partials, x, runs, run_count, counted);
    sum_partials_kernel<<<1, kBlock, 0, stream>>>(out, partials, nblocks);
  });
}

// ---- scaling ----

namespace {

// x(N) *= scale.
template <typename T>
__global__ void scale_kernel(T* x, int64_t n, float scale) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) x[i] = Store<T>(Load(x[i]) * scale);
}

}  // namespace

template <typename T>
auto Scale(T* x, int64_t n, float scale, cudaStream_t stream) -> cudaError_t {
  return device::Run({n}, n, [&] { scale_kernel<<<device::Blocks(n), kBlock, 0, stream>>>(x, n, scale); });
}

// ---- AdamW ----

namespace {

// lr_decay if element i lies in a run of decayed(count) (sorted by first), else 0.
__device__ __forceinline__ auto DecayAt(int64_t i, const DeviceRun* decayed, int64_t count, float lr_decay) -> float {
  int64_t lo = 0, hi = count;  // the runs with first <= i are [0, lo)
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (decayed[mid].first <= i) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo > 0 && i < decayed[lo - 1].first + decayed[lo - 1].count ? lr_decay : 0.0f;
}

// master(N), m(N), v(N) updated by optim::AdamWElement with grads(N),
// weight decay inside the runs decayed(decayed_count); publish(N) (or null)
// = the new master rounded to T.
template <typename T>
__global__ void adamw_kernel(float* master, const T* grads, float* m, float* v, int64_t n, const DeviceRun* decayed,
                             int64_t decayed_count, optim::ElementScalars s, T* publish) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float lr_decay = DecayAt(i, decayed, decayed_count, s.lr_decay);
    optim::AdamWElement(master[i], Load(grads[i]), m[i], v[i], s, lr_decay);
    if (publish != nullptr) publish[i] = Store<T>(master[i]);
  }
}

}  // namespace

template <typename T>
auto AdamWUpdate(float* master, const T* grads, float* m, float* v, int64_t n, const DeviceRun* decayed,
                 int64_t decayed_count, const optim::ElementScalars& s, T* publish, cudaStream_t stream)
    -> cudaError_t {
  return device::Run({n, decayed_count}, n, [&] {
    adamw_kernel<<<device::Blocks(n), kBlock, 0, stream>>>(master, grads, m, v, n, decayed, decayed_count, s, publish);
  });
}

#define AVF_STEP_KERNELS(T)                                                                                \
  template auto SquaredNorm<T>(double*, const T*, const DeviceRun*, int64_t, int64_t, void*, cudaStream_t) \
      ->cudaError_t;                                                                                       \
  template auto Scale<T>(T*, int64_t, float, cudaStream_t)->cudaError_t;                                   \
  template auto AdamWUpdate<T>(float*, const T*, float*, float*, int64_t, const DeviceRun*, int64_t,       \
                               const optim::ElementScalars&, T*, cudaStream_t)                             \
      ->cudaError_t;

AVF_STEP_KERNELS(float)
AVF_STEP_KERNELS(Bf16)

#undef AVF_STEP_KERNELS

}  // namespace avf::kernels
