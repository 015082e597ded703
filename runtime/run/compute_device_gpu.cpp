// ChooseDevice where the CUDA backend is built (kernels/).
#include <fmt/format.h>

#include "comm/nccl_communicator.h"
#include "kernels/cuda_backend.h"
#include "run/compute_device.h"

namespace avf::run {

namespace {

auto Fail(const std::string& message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto OnGpu(int device) -> ComputeDevice {
  ComputeDevice d{true, fmt::format("GPU {} ({})", device, kernels::DeviceName(device)), {}};
  d.backends.fp32 = [device] { return kernels::CreateBackend<float>(device); };
  d.backends.bf16 = [device] { return kernels::CreateBackend<backend::Bf16>(device); };
  return d;
}

}  // namespace

auto CudaBackendBuilt() -> bool { return true; }

auto GpuWorld(const comm::TcpOptions& mesh, int device) -> llvm::Expected<std::unique_ptr<comm::Communicator>> {
  auto world = comm::NcclCommunicator::Create({.store = mesh.store,
                                               .id = mesh.id,
                                               .rank = mesh.rank,
                                               .size = mesh.size,
                                               .device = device,
                                               .timeout = mesh.timeout,
                                               .setup_timeout = mesh.setup_timeout});
  if (!world) return world.takeError();
  return std::unique_ptr<comm::Communicator>(std::move(*world));
}

auto ChooseDevice(std::string_view choice, const DeviceNeeds& needs) -> llvm::Expected<ComputeDevice> {
  if (choice == "cpu") return ComputeDevice{false, "the CPU", {}};
  auto device = static_cast<int>(needs.local_rank);
  std::string problem = kernels::DeviceProblem(device);
  if (problem.empty()) problem = kernels::HeadDimProblem(needs.head_dim);
  if (choice == "auto" && !problem.empty()) return ComputeDevice{false, "the CPU", {}};
  if (!problem.empty()) {
    return Fail(
        fmt::format("--device gpu: local rank {} trains on GPU {}, and {}; use --device cpu to train on "
                    "the CPU",
                    needs.local_rank, device, problem));
  }
  int visible = kernels::VisibleGpus();
  if (needs.ranks_per_node > visible) {
    return Fail(
        fmt::format("the plan runs {} ranks on this node, one per GPU, but it shows {} GPU{}{}; give the pod "
                    "or job {} GPUs, compile the job for {} GPUs per node, or train on the CPU (--device cpu)",
                    needs.ranks_per_node, visible, visible == 1 ? "" : "s", kernels::VisibleDevicesNote(),
                    needs.ranks_per_node, visible));
  }
  return OnGpu(device);
}

}  // namespace avf::run
