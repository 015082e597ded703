// What a rank trains on (`avf-run --device`): the CPU, or the GPU of its
// local rank with the CUDA backend (kernels/). Checked when the rank starts,
// before it joins the others, so a GPU job on a node without its GPUs fails
// at once, naming what is missing, and no rank waits on it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <llvm/Support/Error.h>

#include "comm/tcp_communicator.h"
#include "parallel/engine.h"

namespace avf::run {

struct ComputeDevice {
  bool gpu = false;
  std::string name;             // "the CPU", or "GPU 1 (NVIDIA H200 (sm_90, 139.8 GiB))"
  parallel::Backends backends;  // the CUDA backend's factories on a GPU; empty on the CPU
};

// `choice` is gpu, cpu or auto (the GPU where this avf-run has the CUDA
// backend and the GPU can run it, else the CPU). A GPU rank needs this
// build's CUDA backend, GPU `local_rank` visible and of sm_80 or later, as
// many visible GPUs as the node runs ranks (`ranks_per_node`, one each), and
// a model whose heads (`head_dim` wide) the GPU's attention takes.
struct DeviceNeeds {
  int64_t local_rank = 0, ranks_per_node = 1, head_dim = 0;
};
auto ChooseDevice(std::string_view choice, const DeviceNeeds& needs) -> llvm::Expected<ComputeDevice>;

// Whether this avf-run was built with the CUDA backend.
auto CudaBackendBuilt() -> bool;

// The world of GPU ranks: an NCCL communicator (on `device`) over the
// options of the TCP mesh it replaces (store, id, rank, size, timeouts);
// every group split from it is NCCL's too. The preflight's GPU world too.
auto GpuWorld(const comm::TcpOptions& mesh, int device) -> llvm::Expected<std::unique_ptr<comm::Communicator>>;

}  // namespace avf::run
