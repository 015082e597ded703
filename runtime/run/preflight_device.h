// Where a preflight rank runs its all-reduces: the host (TCP communicator)
// or its GPU (NCCL). The GPU side is preflight_gpu.cpp where CMake finds
// CUDA and NCCL, else preflight_no_gpu.cpp, which says the build has none.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include <llvm/Support/Error.h>

#include "comm/communicator.h"
#include "comm/tcp_communicator.h"

namespace avf::run::preflight {

class Device {
 public:
  virtual ~Device() = default;
  // "cpu", or the GPU's name and memory: "NVIDIA H100 80GB HBM3 (79.1 GiB)".
  virtual auto Describe() const -> std::string = 0;
  // The all-reduce buffer of `count` floats on the device.
  virtual auto Allocate(size_t count) -> llvm::Error = 0;
  virtual auto data() -> float* = 0;
  // Sets every element of the buffer to `value`, and waits until it is done.
  virtual auto Fill(float value) -> llvm::Error = 0;
  // The first element that is not `value`: its index and value.
  struct Mismatch {
    size_t index = 0;
    float value = 0;
  };
  virtual auto FirstMismatch(float value) -> llvm::Expected<std::optional<Mismatch>> = 0;
  // The world communicator over this device; `mesh` holds the store, rank,
  // size and timeouts (and, for TCP, the token and address).
  virtual auto CreateWorld(const comm::TcpOptions& mesh) -> llvm::Expected<std::unique_ptr<comm::Communicator>> = 0;
};

// The host: no check, a host buffer, the TCP mesh.
auto OpenCpu() -> std::unique_ptr<Device>;

// Whether this avf-run was built with CUDA and NCCL.
auto GpuBuild() -> bool;

// The device check of a GPU rank: CUDA device `local_rank` is visible and
// can be selected. Its problem in one sentence otherwise.
auto OpenGpu(int local_rank) -> llvm::Expected<std::unique_ptr<Device>>;

}  // namespace avf::run::preflight
