// The CUDA backend for the engine's GPU rows (engine_test.cpp), where this
// build has it: every rank's engine on GPU 0 (ranks share it, talking over
// TCP through staged communicators). The check of the GPU runs in a forked
// child, so the test process itself never initializes CUDA before it forks
// its ranks.
#pragma once

#include <string>

#include "parallel/engine.h"

namespace avf::testing {

// "" when GPU 0 can run the CUDA backend, else why not.
auto GpuProblem() -> std::string;
// The backends of GPU 0 (empty factories where the build has no CUDA backend).
auto GpuBackends() -> parallel::Backends;

}  // namespace avf::testing
