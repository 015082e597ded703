// The fused AdamW update (kernels.h): one thread per element, a grid-stride
// loop, the CPU optimizer's element function.
#include "kernels/device.cuh"
#include "kernels/kernels.h"

namespace avf::kernels {

namespace {

using device::GlobalThread;
using device::GridStride;

// params(N), grads(N), m(N), v(N), decay(N) or null: optim::AdamWElement on
// each element, as the CPU optimizer.
__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, const uint8_t* decay, int64_t n,
                             optim::ElementScalars s) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float lr_decay = decay == nullptr || decay[i] != 0 ? s.lr_decay : 0.0f;
    optim::AdamWElement(params[i], grads[i], m[i], v[i], s, lr_decay);
  }
}

}  // namespace

auto AdamWUpdate(float* params, const float* grads, float* m, float* v, const uint8_t* decay, int64_t n,
                 const optim::OptimizerConfig& config, int64_t step, double grad_norm, cudaStream_t stream)
    -> cudaError_t {
  optim::ElementScalars s = optim::ElementScalarsOf(config, optim::ScalarsOf(config, step, grad_norm));
  return device::Run({n}, n, [&] {
    adamw_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(params, grads, m, v, decay, n, s);
  });
}

}  // namespace avf::kernels
