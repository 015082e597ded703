// The CPU implementation of the backend interface (backend/backend.h): host
// memory, and the kernels of kernels.h.
#pragma once

#include "backend/backend.h"

namespace avf::cpu {

// Float and backend::Bf16 (mixed precision) for training, double for the
// finite-difference gradient checks. One shared, stateless instance per type.
template <typename T>
auto Backend() -> backend::Kernels<T>&;

}  // namespace avf::cpu
