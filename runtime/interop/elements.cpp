#include "interop/elements.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>

#include "numeric/bf16.h"

namespace avf::interop {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian, read in place");

auto HalfToFloat(uint16_t bits) -> float {
  uint32_t sign = static_cast<uint32_t>(bits >> 15) << 31, exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal: exact
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | mantissa << 13);
  return std::bit_cast<float>(sign | (exponent - 15 + 127) << 23 | mantissa << 13);
}

void DecodeElements(Dtype dtype, const uint8_t* bytes, size_t count, float* out) {
  switch (dtype) {
    case Dtype::F32: std::memcpy(out, bytes, count * 4); return;
    case Dtype::BF16:
      for (size_t i = 0; i < count; ++i) {
        numeric::Bf16 b;
        std::memcpy(&b.bits, bytes + 2 * i, 2);
        out[i] = numeric::ToFloat(b);
      }
      return;
    case Dtype::F16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        out[i] = HalfToFloat(h);
      }
      return;
  }
}

void EncodeElements(Dtype dtype, const float* values, size_t count, uint8_t* bytes) {
  assert(dtype != Dtype::F16);
  if (dtype == Dtype::F32) {
    std::memcpy(bytes, values, count * 4);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    numeric::Bf16 b = numeric::ToBf16(values[i]);
    std::memcpy(bytes + 2 * i, &b.bits, 2);
  }
}

}  // namespace avf::interop
