// What every .cu file of kernels/ shares: loading and storing elements in
// fp32 (bf16 widened exactly, rounded once to nearest even like
// numeric::ToBf16), warp and block reductions, and the launch helper that
// checks sizes and reports the launch's error. Device code only (nvcc).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "backend/element.h"

namespace avf::kernels::device {

using backend::Bf16;

constexpr int kBlock = 256;
constexpr int kWarp = 32;
constexpr int64_t kMaxBlocks = 65535;

__device__ __forceinline__ auto Load(float x) -> float { return x; }
__device__ __forceinline__ auto Load(Bf16 x) -> float { return __uint_as_float(static_cast<uint32_t>(x.bits) << 16); }

// The rounding of numeric::ToBf16, bit for bit (NaN kept quiet with its sign).
template <typename T>
__device__ __forceinline__ auto Store(float x) -> T {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return Bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
    uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return Bf16{static_cast<uint16_t>((u + rounding) >> 16)};
  }
}

// x += add, rounded once.
template <typename T>
__device__ __forceinline__ void AddTo(T& x, float add) {
  x = Store<T>(Load(x) + add);
}

__device__ __forceinline__ auto WarpSum(float x) -> float {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ __forceinline__ auto WarpMax(float x) -> float {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// The sum (or max) over the block's threads, returned to every thread; the
// block size is a multiple of 32, at most 1024. `shared` holds 32 floats.
__device__ __forceinline__ auto BlockSum(float x, float* shared) -> float {
  int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  int warps = static_cast<int>(blockDim.x) / kWarp;
  x = WarpSum(x);
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  x = lane < warps ? shared[lane] : 0.0f;
  return WarpSum(x);
}

__device__ __forceinline__ auto BlockMax(float x, float* shared) -> float {
  int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  int warps = static_cast<int>(blockDim.x) / kWarp;
  x = WarpMax(x);
  __syncthreads();
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  x = lane < warps ? shared[lane] : -INFINITY;
  return WarpMax(x);
}

// The first index of this thread and the grid's stride, for a grid-stride loop.
__device__ __forceinline__ auto GlobalThread() -> int64_t { return blockIdx.x * int64_t{blockDim.x} + threadIdx.x; }
__device__ __forceinline__ auto GridStride() -> int64_t { return int64_t{gridDim.x} * blockDim.x; }

inline auto Blocks(int64_t n, int block = kBlock) -> unsigned {
  return static_cast<unsigned>(std::min(kMaxBlocks, std::max<int64_t>(1, (n + block - 1) / block)));
}

// Checks that every size is non-negative, launches unless there is nothing
// to do (`work` == 0), and reports the launch's error.
template <typename Launch>
auto Run(std::initializer_list<int64_t> sizes, int64_t work, Launch launch) -> cudaError_t {
  for (int64_t s : sizes) {
    if (s < 0) return cudaErrorInvalidValue;
  }
  if (work == 0) return cudaSuccess;
  launch();
  return cudaGetLastError();
}

}  // namespace avf::kernels::device
