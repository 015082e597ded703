// CUDA kernels of the transformer and its optimizer: the GPU counterparts of
// runtime/cpu/kernels.h and runtime/optim/optimizer.h, with the same names,
// shapes and contracts (row-major activations; every backward ADDS into its
// gradient outputs). Pointers are device memory. Each call queues its kernel
// on `stream` and returns without waiting; the result is the launch's error
// (cudaSuccess, cudaErrorInvalidValue for a negative size, or whatever the
// runtime reports, e.g. no device), never a crash. Plain C++: host code
// includes this header without nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "optim/optimizer.h"

namespace avf::kernels {

// out(N) = gelu(in(N)), the tanh approximation (GPT-2), computed in double
// like the CPU kernel.
auto GeluForward(float* out, const float* in, int64_t n, cudaStream_t stream) -> cudaError_t;
// din(N) += gelu'(in(N)) * dout(N).
auto GeluBackward(float* din, const float* in, const float* dout, int64_t n, cudaStream_t stream) -> cudaError_t;

// One AdamW update of params(N) with grads(N) and the moments m(N), v(N),
// element by element as optim::AdamW::Step with the scalars of
// optim::ScalarsOf(config, step, grad_norm): `step` 0-based, `grad_norm`
// the norm of the WHOLE gradient (all ranks), so every slice clips alike.
// decay(N) is 1 where weight decay applies, 0 where not (norms, biases);
// null: everywhere.
auto AdamWUpdate(float* params, const float* grads, float* m, float* v, const uint8_t* decay, int64_t n,
                 const optim::OptimizerConfig& config, int64_t step, double grad_norm, cudaStream_t stream)
    -> cudaError_t;

}  // namespace avf::kernels
