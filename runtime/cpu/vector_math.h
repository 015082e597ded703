// What the CPU kernels share: the threshold for threading a loop, an exp in
// float that vectorises, and the one-rounding add into a tensor.
//
// The loops are plain C++ for GCC's `omp simd` at the baseline instruction
// set (the project builds without -march). One catch: under the default
// -ftrapping-math GCC will not vectorise `a < b ? x : y` on floats when it can
// move arithmetic into an arm (a constant arm invites that), so selects on
// float comparisons use std::isless (a quiet comparison) and pick between
// values that need no arithmetic after the select, or pick integers.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/element.h"
#include "numeric/vector_clones.h"

namespace avf::cpu::detail {

using backend::Narrow;
using backend::Wide;
using backend::Widen;

// Loops shorter than this run on one thread: starting the team costs more.
constexpr int64_t kParallelMin = 1 << 14;

// A float's bits as an int32 that orders like the float (the negative
// floats' magnitude bits flipped), and back: clamping a float is then an
// integer min and max, which GCC keeps out of the vector selects above.
inline auto OrderedBits(float x) -> int32_t {
  int32_t bits = std::bit_cast<int32_t>(x);
  return bits ^ ((bits >> 31) & 0x7fffffff);
}
inline auto FromOrderedBits(int32_t key) -> float { return std::bit_cast<float>(key ^ ((key >> 31) & 0x7fffffff)); }

// e^x in float: relative error below 2e-7 (cpu_kernels_bf16_test measures
// it) for x in [-87.3, 88.3]; 0 below -87.33 (where e^x < 2^-126), +inf from
// 88.38 up, NaN for NaN. x = n ln2 + r with n an integer and |r| <= ln2/2
// (ln2 in two parts, the first short enough that n ln2hi is exact), a
// degree-6 polynomial fitted to e^r there, and 2^n written as exponent bits.
inline auto FastExp(float x) -> float {
  constexpr float kMin = -87.3365448f, kMax = 88.7228394f;  // ln 2^-126, ln 2^128
  constexpr float kLog2e = 1.44269504f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  // 1.5 x 2^23: adding it rounds to an integer and leaves it in the low bits.
  constexpr float kRound = 12582912.0f;
  float clamped = FromOrderedBits(std::min(std::max(OrderedBits(x), OrderedBits(kMin)), OrderedBits(kMax)));
  float shifted = clamped * kLog2e + kRound;
  float n = shifted - kRound;
  int32_t exponent = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRound);
  float r = clamped - n * kLn2Hi - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t scale_bits = std::isless(x, kMin) ? 0 : (exponent + 127) << 23;
  scale_bits = std::isunordered(x, x) ? std::bit_cast<int32_t>(NAN) : scale_bits;
  return p * std::bit_cast<float>(scale_bits);
}

// e^x in the kernels' arithmetic type: FastExp for float, std::exp for the
// gradient checks' double.
template <typename W>
auto Exp(W x) -> W {
  if constexpr (std::is_same_v<W, float>) return FastExp(x);
  else return std::exp(x);
}

template <typename W>
auto Sigmoid(W x) -> W {
  return W(1) / (W(1) + Exp(-x));
}

// max(a, b) as a select that vectorises (b when a < b; a NaN b is skipped).
template <typename W>
auto Max(W a, W b) -> W {
  return std::isless(a, b) ? b : a;
}

// dst[i] += add[i] for i < n, added in Wide<T> and rounded once.
template <typename T>
void AddWide(T* dst, const Wide<T>* add, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = Narrow<T>(Widen(dst[i]) + add[i]);
}

}  // namespace avf::cpu::detail
