#include <chrono>

#include "forked_ranks.h"
#include "gpu_backends.h"
#include "kernels/cuda_backend.h"

namespace avf::testing {

auto GpuProblem() -> std::string {
  static const std::string problem = [] {
    comm::testing::Child c = comm::testing::Spawn([](uint16_t) -> std::string { return kernels::DeviceProblem(0); });
    comm::testing::Give(c, 0);
    return comm::testing::Reap(c, rendezvous::net::Clock::now() + std::chrono::seconds(30));
  }();
  return problem;
}

auto GpuBackends() -> parallel::Backends {
  return {[] { return kernels::CreateBackend<float>(0); }, [] { return kernels::CreateBackend<backend::Bf16>(0); }};
}

}  // namespace avf::testing
