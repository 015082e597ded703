// The element encodings of safetensors data: little-endian F32, BF16 and
// F16, to and from fp32. Plain C++17 interface; the implementation uses
// numeric/bf16.h (C++20).
#pragma once

#include <cstddef>
#include <cstdint>

#include "interop/safetensors.h"

namespace avf::interop {

// Widens `count` elements at `bytes` to fp32; every F32, BF16 and F16 value
// is exact in fp32.
void DecodeElements(Dtype dtype, const uint8_t* bytes, size_t count, float* out);
// Narrows `count` fp32 values into `bytes`: F32 as they are, BF16 rounded to
// nearest even (NaN stays NaN). F16 is not written (asserted).
void EncodeElements(Dtype dtype, const float* values, size_t count, uint8_t* bytes);

// An IEEE binary16 value as fp32: normals, subnormals, infinities and NaN
// (its payload kept in the top mantissa bits).
auto HalfToFloat(uint16_t bits) -> float;

}  // namespace avf::interop
