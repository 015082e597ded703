// The kernels of kernels.h, llm.c style: one thread per element, a grid-stride
// loop so any N fits the grid, each kernel beside its host launcher.
#include "kernels/kernels.h"

#include <algorithm>

namespace avf::kernels {

namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 65535;
constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)

auto Blocks(int64_t n) -> unsigned { return static_cast<unsigned>(std::min(kMaxBlocks, (n + kBlock - 1) / kBlock)); }

// Checks the size, launches, and reports the launch's error.
template <typename Launch>
auto Run(int64_t n, Launch launch) -> cudaError_t {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  launch(Blocks(n));
  return cudaGetLastError();
}

// out(N), in(N)
__global__ void gelu_forward_kernel(float* out, const float* in, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    double x = in[i];
    out[i] = static_cast<float>(0.5 * x * (1.0 + tanh(kGeluScale * (x + 0.044715 * x * x * x))));
  }
}

// din(N) += gelu'(in) * dout(N)
__global__ void gelu_backward_kernel(float* din, const float* in, const float* dout, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    double x = in[i];
    double th = tanh(kGeluScale * (x + 0.044715 * x * x * x));
    double du = kGeluScale * (1.0 + 3.0 * 0.044715 * x * x);
    double grad = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
    din[i] += static_cast<float>(grad * dout[i]);
  }
}

// params(N), grads(N), m(N), v(N), decay(N) or null: optim::AdamWElement on
// each element, as the CPU optimizer.
__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, const uint8_t* decay, int64_t n,
                             optim::ElementScalars s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    float lr_decay = decay == nullptr || decay[i] != 0 ? s.lr_decay : 0.0f;
    optim::AdamWElement(params[i], grads[i], m[i], v[i], s, lr_decay);
  }
}

}  // namespace

auto GeluForward(float* out, const float* in, int64_t n, cudaStream_t stream) -> cudaError_t {
  return Run(n, [&](unsigned blocks) { gelu_forward_kernel<<<blocks, kBlock, 0, stream>>>(out, in, n); });
}

auto GeluBackward(float* din, const float* in, const float* dout, int64_t n, cudaStream_t stream) -> cudaError_t {
  return Run(n, [&](unsigned blocks) { gelu_backward_kernel<<<blocks, kBlock, 0, stream>>>(din, in, dout, n); });
}

auto AdamWUpdate(float* params, const float* grads, float* m, float* v, const uint8_t* decay, int64_t n,
                 const optim::OptimizerConfig& config, int64_t step, double grad_norm, cudaStream_t stream)
    -> cudaError_t {
  optim::ElementScalars s = optim::ElementScalarsOf(config, optim::ScalarsOf(config, step, grad_norm));
  return Run(n,
             [&](unsigned blocks) { adamw_kernel<<<blocks, kBlock, 0, stream>>>(params, grads, m, v, decay, n, s); });
}

}  // namespace avf::kernels
