#include "cpu/blas_core.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include <cblas.h>

namespace avf::cpu {

namespace {

// OpenBLAS's x86 core names (openblas_get_corename, lower case) by the
// kernels they run.
constexpr std::array<std::pair<std::string_view, VectorLevel>, 23> kCores{{
    {"skylakex", VectorLevel::Avx512}, {"cooperlake", VectorLevel::Avx512}, {"sapphirerapids", VectorLevel::Avx512},
    {"haswell", VectorLevel::Avx2},    {"zen", VectorLevel::Avx2},          {"excavator", VectorLevel::Avx2},
    {"sandybridge", VectorLevel::Avx}, {"bulldozer", VectorLevel::Avx},     {"piledriver", VectorLevel::Avx},
    {"steamroller", VectorLevel::Avx}, {"prescott", VectorLevel::Sse},      {"core2", VectorLevel::Sse},
    {"penryn", VectorLevel::Sse},      {"dunnington", VectorLevel::Sse},    {"nehalem", VectorLevel::Sse},
    {"atom", VectorLevel::Sse},        {"opteron", VectorLevel::Sse},       {"opteron_sse3", VectorLevel::Sse},
    {"barcelona", VectorLevel::Sse},   {"bobcat", VectorLevel::Sse},        {"nano", VectorLevel::Sse},
    {"katmai", VectorLevel::Sse},      {"northwood", VectorLevel::Sse},
}};

}  // namespace

auto CpuVectorLevel() -> VectorLevel {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // OpenBLAS's SkylakeX kernels use AVX-512 F, CD, BW, DQ and VL.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return VectorLevel::Avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorLevel::Avx2;
  if (__builtin_cpu_supports("avx")) return VectorLevel::Avx;
  if (__builtin_cpu_supports("sse3")) return VectorLevel::Sse;
#endif
  return VectorLevel::Unknown;
}

auto CoreVectorLevel(std::string_view core) -> VectorLevel {
  std::string lower(core);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [name, level] : kCores) {
    if (name == lower) return level;
  }
  return VectorLevel::Unknown;
}

auto BetterOpenBlasCore(std::string_view picked, VectorLevel cpu) -> std::string {
  VectorLevel have = CoreVectorLevel(picked);
  if (have == VectorLevel::Unknown || cpu == VectorLevel::Unknown || cpu <= have) return "";
  switch (cpu) {
    case VectorLevel::Avx512: return "SKYLAKEX";
    case VectorLevel::Avx2: return "HASWELL";
    case VectorLevel::Avx: return "SANDYBRIDGE";
    default: return "";
  }
}

auto OpenBlasCore() -> std::string {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

}  // namespace avf::cpu
