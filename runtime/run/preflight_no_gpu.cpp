// A build without CUDA and NCCL: preflight checks the CPU only.
#include "run/preflight_device.h"

namespace avf::run::preflight {

auto GpuBuild() -> bool { return false; }

auto OpenGpu(int local_rank) -> llvm::Expected<std::unique_ptr<Device>> {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "this avf-run was built without CUDA and NCCL; it checks CPUs only (--device cpu)");
}

}  // namespace avf::run::preflight
