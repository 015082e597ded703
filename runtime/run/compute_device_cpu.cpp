// ChooseDevice where this avf-run has no CUDA backend: the CPU only.
#include "run/compute_device.h"

namespace avf::run {

auto CudaBackendBuilt() -> bool { return false; }

auto GpuWorld(const comm::TcpOptions&, int) -> llvm::Expected<std::unique_ptr<comm::Communicator>> {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "this avf-run was built without CUDA and NCCL");
}

auto ChooseDevice(std::string_view choice, const DeviceNeeds&) -> llvm::Expected<ComputeDevice> {
  if (choice == "gpu") {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--device gpu: this avf-run was built without the CUDA toolkit and trains on "
                                   "CPUs only; use an avf-run built with CUDA, or --device cpu");
  }
  return ComputeDevice{false, "the CPU", {}};
}

}  // namespace avf::run
