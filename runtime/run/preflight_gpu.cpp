// A GPU as a preflight device (built where CMake finds CUDA and NCCL): the
// device check, a device buffer, the NCCL world communicator. Only the CUDA
// runtime API, never libcuda, so avf-run starts on machines without a driver.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "run/compute_device.h"
#include "run/preflight_device.h"
#include "run/preflight_report.h"

namespace avf::run::preflight {

namespace {

// Fill and FirstMismatch move the buffer through the host in pieces of this
// many floats (4 MiB).
constexpr size_t kChunk = size_t{1} << 20;

auto CudaError(const std::string& what, cudaError_t e) -> llvm::Error {
  (void)cudaGetLastError();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s: %s", what.c_str(), cudaGetErrorName(e),
                                 cudaGetErrorString(e));
}

auto VisibleDevicesNote() -> std::string {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? fmt::format(" (CUDA_VISIBLE_DEVICES={})", v) : std::string();
}

class GpuDevice final : public Device {
 public:
  GpuDevice(int device, std::string name, size_t memory) : device_(device), name_(std::move(name)), memory_(memory) {}

  ~GpuDevice() override {
    if (buffer_) (void)cudaSetDevice(device_), (void)cudaFree(buffer_);
  }

  auto Describe() const -> std::string override {
    return fmt::format("{} ({:.1f} GiB)", name_, static_cast<double>(memory_) / (1 << 30));
  }

  auto Allocate(size_t count) -> llvm::Error override {
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return Failure("cudaSetDevice", e);
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, count * sizeof(float)); e != cudaSuccess) {
      return Failure(fmt::format("cudaMalloc of {}", FormatBytes(count * sizeof(float))), e);
    }
    buffer_ = static_cast<float*>(p);
    count_ = count;
    return llvm::Error::success();
  }

  auto data() -> float* override { return buffer_; }

  auto Fill(float value) -> llvm::Error override {
    std::vector<float> host(std::min(count_, kChunk), value);
    for (size_t at = 0; at < count_; at += host.size()) {
      size_t n = std::min(host.size(), count_ - at);
      if (cudaError_t e = cudaMemcpy(buffer_ + at, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
          e != cudaSuccess) {
        return Failure("cudaMemcpy to the device", e);
      }
    }
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return Failure("cudaDeviceSynchronize", e);
    return llvm::Error::success();
  }

  auto FirstMismatch(float value) -> llvm::Expected<std::optional<Mismatch>> override {
    std::vector<float> host(std::min(count_, kChunk));
    for (size_t at = 0; at < count_; at += host.size()) {
      size_t n = std::min(host.size(), count_ - at);
      if (cudaError_t e = cudaMemcpy(host.data(), buffer_ + at, n * sizeof(float), cudaMemcpyDeviceToHost);
          e != cudaSuccess) {
        return Failure("cudaMemcpy from the device", e);
      }
      auto it =
          std::find_if(host.begin(), host.begin() + static_cast<ptrdiff_t>(n), [value](float x) { return x != value; });
      if (it != host.begin() + static_cast<ptrdiff_t>(n)) {
        return Mismatch{.index = at + static_cast<size_t>(it - host.begin()), .value = *it};
      }
    }
    return std::nullopt;
  }

  auto CreateWorld(const comm::TcpOptions& mesh) -> llvm::Expected<std::unique_ptr<comm::Communicator>> override {
    return GpuWorld(mesh, device_);
  }

 private:
  auto Failure(const std::string& what, cudaError_t e) const -> llvm::Error {
    return CudaError(fmt::format("CUDA device {}: {}", device_, what), e);
  }

  int device_;
  std::string name_;
  size_t memory_;
  float* buffer_ = nullptr;
  size_t count_ = 0;
};

}  // namespace

auto GpuBuild() -> bool { return true; }

auto OpenGpu(int local_rank) -> llvm::Expected<std::unique_ptr<Device>> {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    return CudaError("no CUDA device is visible" + VisibleDevicesNote() + "; cudaGetDeviceCount", e);
  }
  if (local_rank >= count) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "local rank %d needs CUDA device %d, but %d %s visible%s", local_rank, local_rank,
                                   count, count == 1 ? "is" : "are", VisibleDevicesNote().c_str());
  }
  if (cudaError_t e = cudaSetDevice(local_rank); e != cudaSuccess) {
    return CudaError(fmt::format("cudaSetDevice({})", local_rank), e);
  }
  // The first runtime call that needs the device creates its context: a GPU
  // that is visible but broken (fallen off the bus, in an error state) fails here.
  if (cudaError_t e = cudaFree(nullptr); e != cudaSuccess) {
    return CudaError(fmt::format("creating a CUDA context on device {}", local_rank), e);
  }
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, local_rank); e != cudaSuccess) {
    return CudaError(fmt::format("cudaGetDeviceProperties({})", local_rank), e);
  }
  return std::make_unique<GpuDevice>(local_rank, prop.name, prop.totalGlobalMem);
}

}  // namespace avf::run::preflight
