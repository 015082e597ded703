// OpenBLAS's kernels chosen by what this CPU can do. A DYNAMIC_ARCH build
// picks its core once, at load, from a table of the CPU models it knows; on a
// model newer than the library it falls back to older kernels (AVX2 kernels
// on an AVX-512 machine: half the SGEMM rate; generic ones on an unknown
// vendor model). The CPU's feature flags tell the widest kernels it runs, and
// OPENBLAS_CORETYPE, read at load, asks for them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace avf::cpu {

enum class VectorLevel : uint8_t { Unknown, Sse, Avx, Avx2, Avx512 };

// The widest vector extension this CPU and its OS run (cpuid, xgetbv).
auto CpuVectorLevel() -> VectorLevel;
// The vector level of an OpenBLAS x86 core name ("Haswell", "SkylakeX",
// "Prescott"); Unknown for a name this table does not list.
auto CoreVectorLevel(std::string_view core) -> VectorLevel;
// The OPENBLAS_CORETYPE that runs `cpu`'s widest kernels when the core the
// library picked (`picked`) is narrower; "" when it is not, or either is Unknown.
auto BetterOpenBlasCore(std::string_view picked, VectorLevel cpu) -> std::string;
// The core the loaded OpenBLAS runs (openblas_get_corename).
auto OpenBlasCore() -> std::string;

}  // namespace avf::cpu
