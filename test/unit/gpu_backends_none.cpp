#include "gpu_backends.h"

namespace avf::testing {

auto GpuProblem() -> std::string { return "this build has no CUDA backend (no CUDA toolkit where it was built)"; }

auto GpuBackends() -> parallel::Backends { return {}; }

}  // namespace avf::testing
