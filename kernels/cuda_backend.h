// The CUDA implementation of the backend interface (backend/backend.h):
// device memory on one GPU, one compute stream that every kernel and copy is
// queued on, the kernels of kernels.h and cuBLASLt's matmuls. Scratch that a
// kernel needs (norm and embedding gradients, attention's backward) comes
// from one device buffer that grows to the largest shape and stays, so after
// the first step nothing is allocated. A CUDA failure inside a kernel call
// (the interface's calls return nothing: a step cannot go on after one)
// prints what failed on which GPU and exits the rank with status 1.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"

namespace avf::kernels {

// Why CUDA device `device` (an index among the visible devices) cannot run
// the kernels, or "" when it can: no driver, no device, fewer devices
// visible, or an architecture before sm_80 (the build holds sm_80 and sm_90
// code, and compute_80 PTX that the driver compiles for later GPUs).
auto DeviceProblem(int device) -> std::string;
// Why the kernels cannot train a model whose attention heads are `head_dim`
// wide (hidden / heads), or "" when they can.
auto HeadDimProblem(int64_t head_dim) -> std::string;
// "NVIDIA H200 (sm_90, 139.8 GiB)".
auto DeviceName(int device) -> std::string;
// How many GPUs this process sees (0 without a driver), and
// " (CUDA_VISIBLE_DEVICES=...)" where that variable is set, else "".
auto VisibleGpus() -> int;
auto VisibleDevicesNote() -> std::string;

// The backend of element type T (float or backend::Bf16) on `device`, which
// DeviceProblem accepted; its stream and cuBLASLt handle are its own.
template <typename T>
auto CreateBackend(int device) -> std::unique_ptr<backend::Kernels<T>>;

}  // namespace avf::kernels
