// The kernel contract (kernel_contract.h) on the CPU backend, fp32 and bf16.
#include "cpu/cpu_backend.h"
#include "kernel_contract.h"

namespace avf::contract {
namespace {

template <typename E>
struct Cpu {
  using T = E;
  static auto Get() -> Kernels<E>* { return &cpu::Backend<E>(); }
  static auto Skip() -> std::string { return {}; }
};

using CpuBackends = ::testing::Types<Cpu<float>, Cpu<backend::Bf16>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Cpu, KernelContract, CpuBackends);

}  // namespace
}  // namespace avf::contract
