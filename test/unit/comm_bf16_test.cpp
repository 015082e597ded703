// The bf16 value type of the model, kernels and communicators (runtime/numeric/bf16.h): fp32 to
// bf16 rounding (nearest, ties to even) at every edge, bf16 to fp32, and
// ToBf16 against an independent reference over a stride of all 2^32 floats.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "numeric/bf16.h"

namespace avf::numeric {
namespace {

auto Round(uint32_t float_bits) -> uint16_t { return ToBf16(std::bit_cast<float>(float_bits)).bits; }

static_assert(ToBf16(1.0f).bits == 0x3f80 && ToFloat(Bf16{0xc000}) == -2.0f, "constexpr in both directions");

TEST(Bf16, ExactValuesAndSignedZeros) {
  EXPECT_EQ(ToBf16(0.0f).bits, 0x0000);
  EXPECT_EQ(ToBf16(-0.0f).bits, 0x8000);
  EXPECT_TRUE(std::signbit(ToFloat(Bf16{0x8000})) && ToFloat(Bf16{0x8000}) == 0.0f);
  EXPECT_EQ(ToBf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(ToBf16(-1.5f).bits, 0xbfc0);
  EXPECT_EQ(ToBf16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(ToBf16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  EXPECT_EQ(ToFloat(Bf16{0x3f80}), 1.0f);
  EXPECT_EQ(ToFloat(Bf16{0x4049}), 3.140625f);
}

TEST(Bf16, TiesGoToEven) {
  // 1 + 2^-8 lies halfway between 0x3f80 (even) and 0x3f81.
  EXPECT_EQ(Round(0x3f808000), 0x3f80);
  EXPECT_EQ(Round(0x3f807fff), 0x3f80);
  EXPECT_EQ(Round(0x3f808001), 0x3f81);
  // Halfway between 0x3f81 and 0x3f82 (even) goes up.
  EXPECT_EQ(Round(0x3f818000), 0x3f82);
  EXPECT_EQ(Round(0xbf818000), 0xbf82);
  // A tie that carries into the exponent: 0x3fff + 1/2 ulp is 2.0.
  EXPECT_EQ(Round(0x3fff8000), 0x4000);
}

TEST(Bf16, OverflowRoundsToInfinity) {
  EXPECT_EQ(ToBf16(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(ToBf16(-std::numeric_limits<float>::max()).bits, 0xff80);
  // The largest finite bf16 (0x7f7f), just below and at the tie above it.
  EXPECT_EQ(Round(0x7f7f0000), 0x7f7f);
  EXPECT_EQ(Round(0x7f7f7fff), 0x7f7f);
  EXPECT_EQ(Round(0x7f7f8000), 0x7f80);
}

TEST(Bf16, NanStaysAQuietNan) {
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0x7fa12345u, 0xffc00000u, 0xff800001u, 0x7fffffffu}) {
    uint16_t b = Round(nan);
    EXPECT_TRUE(std::isnan(ToFloat(Bf16{b}))) << std::hex << nan;
    EXPECT_EQ(b & 0x0040, 0x0040) << std::hex << nan << ": not quiet";
    EXPECT_EQ(b >> 15, nan >> 31) << std::hex << nan << ": sign";
  }
  EXPECT_EQ(Round(0x7fa12345), 0x7fe1);  // the top payload bits stay
  EXPECT_EQ(Round(0x7f800001), 0x7fc0);  // truncating would give inf
}

TEST(Bf16, SubnormalsRoundLikeAnyValue) {
  EXPECT_EQ(Round(0x00000001), 0x0000);  // the smallest float subnormal is below half a bf16 ulp
  EXPECT_EQ(Round(0x00008000), 0x0000);  // a tie, to the even zero
  EXPECT_EQ(Round(0x00008001), 0x0001);  // the smallest bf16 subnormal
  EXPECT_EQ(Round(0x00018000), 0x0002);
  EXPECT_EQ(Round(0x80008001), 0x8001);
  EXPECT_EQ(Round(0x007fffff), 0x0080);  // the largest subnormal rounds up to the smallest normal
  EXPECT_EQ(ToFloat(Bf16{0x0001}), std::ldexp(1.0f, -133));
  EXPECT_EQ(ToFloat(Bf16{0x807f}), -std::ldexp(127.0f, -133));
}

TEST(Bf16, EveryBf16RoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    Bf16 x{static_cast<uint16_t>(b)};
    uint16_t back = ToBf16(ToFloat(x)).bits;
    if ((b & 0x7fff) > 0x7f80) {
      EXPECT_EQ(back, b | 0x0040) << std::hex << b;  // NaN: made quiet, nothing else changes
    } else {
      ASSERT_EQ(back, b) << std::hex << b;
    }
  }
}

// The value of a non-negative float's bits, with 0x7f800000 standing for 2^128
// (the first value past the largest finite bf16, where rounding overflows).
auto Magnitude(uint32_t bits) -> double {
  return bits == 0x7f800000u ? std::ldexp(1.0, 128) : static_cast<double>(std::bit_cast<float>(bits));
}

// Round to nearest even by comparing distances in double, where they are exact.
auto ReferenceRound(uint32_t u) -> uint16_t {
  const uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
  const uint32_t lo = mag & 0xffff0000u, hi = lo + 0x10000u;
  const double x = Magnitude(mag), below = x - Magnitude(lo), above = Magnitude(hi) - x;
  uint32_t pick = below < above ? lo : above < below ? hi : ((lo >> 16) & 1 ? hi : lo);
  return static_cast<uint16_t>((sign | pick) >> 16);
}

TEST(Bf16, MatchesAReferenceRoundingOverAStrideOfAllFloats) {
  int checked = 0;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 997) {
    auto bits = static_cast<uint32_t>(u);
    if ((bits & 0x7fffffffu) > 0x7f800000u) continue;  // NaN: see NanStaysAQuietNan
    ASSERT_EQ(Round(bits), ReferenceRound(bits)) << std::hex << bits;
    ++checked;
  }
  // Every low half around one value of each binade, where the ties are.
  for (uint32_t high : {0x0000u, 0x0001u, 0x3f80u, 0x3f81u, 0x7f7fu, 0x8080u, 0xc2f7u}) {
    for (uint32_t low = 0; low <= 0xffff; ++low) {
      uint32_t bits = (high << 16) | low;
      ASSERT_EQ(Round(bits), ReferenceRound(bits)) << std::hex << bits;
    }
  }
  EXPECT_GT(checked, 4'000'000);
}

}  // namespace
}  // namespace avf::numeric
