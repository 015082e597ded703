// The kernel contract (kernel_contract.h) on the CUDA backend, fp32 and
// bf16, on GPU 0; every test skips with the reason where that GPU cannot run
// the kernels (no driver, no GPU, an architecture before sm_80).
#include <memory>

#include "kernel_contract.h"
#include "kernels/cuda_backend.h"

namespace avf::contract {
namespace {

template <typename E>
struct Cuda {
  using T = E;
  static auto Get() -> Kernels<E>* {
    static std::unique_ptr<Kernels<E>> backend = Skip().empty() ? kernels::CreateBackend<E>(0) : nullptr;
    return backend.get();
  }
  static auto Skip() -> std::string {
    std::string problem = kernels::DeviceProblem(0);
    return problem.empty() ? problem : "no GPU to run the CUDA kernels on: " + problem;
  }
};

using CudaBackends = ::testing::Types<Cuda<float>, Cuda<backend::Bf16>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, KernelContract, CudaBackends);

}  // namespace
}  // namespace avf::contract
