// bfloat16: the top 16 bits of an IEEE fp32 (1 sign, 8 exponent, 7 mantissa
// bits), the storage type of bf16 tensors in the model, the kernels and the
// communicators. Header-only and constexpr, at the bottom of the runtime's
// layers, so every runtime folder can use it without linking anything.
//
// Arithmetic is never done in bf16: widen with ToFloat (exact), compute in
// fp32, and round once with ToBf16 (round to nearest, ties to even; overflow
// becomes ±inf; subnormals are rounded like any other value, never flushed;
// a NaN stays a NaN, made quiet, with its sign and top payload bits).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace avf::numeric {

// A plain 2-byte value with no operators: comparing bits (what == would do)
// and comparing values (+0 == -0, NaN != NaN) differ, so callers choose.
struct Bf16 {
  uint16_t bits = 0;
};

static_assert(sizeof(Bf16) == 2 && std::is_trivially_copyable_v<Bf16>, "buffers of Bf16 are sent as raw bytes");

// Exact: every bf16 value is an fp32 value.
constexpr auto ToFloat(Bf16 b) -> float { return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16); }

constexpr auto ToBf16(float f) -> Bf16 {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  // NaN: truncating could clear every payload bit and make it an infinity, so
  // keep the top bits and set the quiet bit instead.
  if ((u & 0x7fffffffu) > 0x7f800000u) return Bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  // Adding 0x7fff rounds the dropped half up when it is above one half; the
  // kept bit's parity breaks an exact tie towards even. A carry out of the
  // mantissa bumps the exponent, and out of the largest finite value gives inf.
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return Bf16{static_cast<uint16_t>((u + rounding) >> 16)};
}

}  // namespace avf::numeric
