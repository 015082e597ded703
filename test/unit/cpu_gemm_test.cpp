// The CPU GEMMs (runtime/cpu/gemm.h) against a double-precision reference:
// fp32, bf16 into fp32 and bf16 into bf16, over the four transpose
// combinations, leading dimensions wider than the matrices (padding holds
// NaN, so reading it shows), beta 0 and 1, and odd sizes; the bf16 C rounded
// once, to nearest even; GEMMs nested in an OpenMP parallel region.
// ctest runs this binary again with oneDNN limited to AVX2 and to AVX-512
// without bf16 instructions, where bf16 takes the widened fp32 path.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/kernels.h"

namespace avf::cpu {
namespace {

using backend::Bf16;
using detail::Gemm;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

struct Case {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t pad = 0;  // leading dimension = stored width + pad
  float alpha = 1, beta = 0;

  auto a_rows() const -> int64_t { return trans_a ? k : m; }
  auto a_cols() const -> int64_t { return trans_a ? m : k; }
  auto b_rows() const -> int64_t { return trans_b ? n : k; }
  auto b_cols() const -> int64_t { return trans_b ? k : n; }
  auto lda() const -> int64_t { return a_cols() + pad; }
  auto ldb() const -> int64_t { return b_cols() + pad; }
  auto ldc() const -> int64_t { return n + pad; }
};

auto Describe(const Case& c) -> std::string {
  return std::string(c.trans_a ? "T" : "N") + (c.trans_b ? "T" : "N") + " " + std::to_string(c.m) + "x" +
         std::to_string(c.n) + "x" + std::to_string(c.k) + " pad " + std::to_string(c.pad) + " alpha " +
         std::to_string(c.alpha) + " beta " + std::to_string(c.beta);
}

// A rows x cols matrix with leading dimension ld: values from `value`, NaN
// in the padding.
template <typename T, typename F>
auto Matrix(int64_t rows, int64_t cols, int64_t ld, F value) -> std::vector<T> {
  std::vector<T> x(static_cast<size_t>(rows * ld), backend::Narrow<T>(kNan));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) x[static_cast<size_t>(i * ld + j)] = backend::Narrow<T>(value());
  }
  return x;
}

// Uniform in [-1, 1), or small integers when `integers` (exact in bf16, and
// every sum of their products exact in fp32).
auto Values(uint32_t seed, bool integers) {
  return [gen = std::mt19937(seed), integers]() mutable {
    if (integers) return static_cast<float>(std::uniform_int_distribution<int>(-3, 3)(gen));
    return std::uniform_real_distribution<float>(-1, 1)(gen);
  };
}

template <typename T>
auto At(const std::vector<T>& x, int64_t i, int64_t j, int64_t ld) -> double {
  return backend::Widen(x[static_cast<size_t>(i * ld + j)]);
}

// alpha op(A) op(B) + beta C in double, and sum |alpha a b| + |beta c| per
// element: the scale of fp32 accumulation's rounding error.
template <typename TA, typename TC>
void Reference(const Case& c, const std::vector<TA>& a, const std::vector<TA>& b, const std::vector<TC>& c0,
               std::vector<double>& want, std::vector<double>& scale) {
  want.assign(static_cast<size_t>(c.m * c.n), 0);
  scale.assign(want.size(), 0);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, size = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        double x = c.trans_a ? At(a, p, i, c.lda()) : At(a, i, p, c.lda());
        double y = c.trans_b ? At(b, j, p, c.ldb()) : At(b, p, j, c.ldb());
        sum += x * y, size += std::abs(x * y);
      }
      double old = c.beta != 0 ? At(c0, i, j, c.ldc()) : 0;
      want[static_cast<size_t>(i * c.n + j)] = c.alpha * sum + c.beta * old;
      scale[static_cast<size_t>(i * c.n + j)] = std::abs(c.alpha) * size + std::abs(c.beta * old);
    }
  }
}

// What a GEMM of this case computed, with its inputs and the reference.
template <typename TA, typename TC>
struct Result {
  std::vector<TA> a, b;
  std::vector<TC> c0, c;
  std::vector<double> want, scale;
};

template <typename TA, typename TC>
auto RunCase(const Case& c, uint32_t seed, bool integers) -> Result<TA, TC> {
  Result<TA, TC> r;
  r.a = Matrix<TA>(c.a_rows(), c.a_cols(), c.lda(), Values(seed, integers));
  r.b = Matrix<TA>(c.b_rows(), c.b_cols(), c.ldb(), Values(seed + 1, integers));
  // With beta 0, C holds NaN, which the GEMM must not read.
  auto c_values = Values(seed + 2, integers);
  r.c0 = Matrix<TC>(c.m, c.n, c.ldc(), [&] { return c.beta != 0 ? c_values() : kNan; });
  r.c = r.c0;
  using Scalar = backend::Wide<TA>;
  Gemm(c.trans_a, c.trans_b, c.m, c.n, c.k, static_cast<Scalar>(c.alpha), r.a.data(), c.lda(), r.b.data(), c.ldb(),
       static_cast<Scalar>(c.beta), r.c.data(), c.ldc());
  Reference(c, r.a, r.b, r.c0, r.want, r.scale);
  return r;
}

// fp32 accumulation: within a few units of fp32 rounding of the sum's scale.
template <typename TA>
void ExpectFp32Close(const Case& c, const Result<TA, float>& r) {
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      size_t e = static_cast<size_t>(i * c.n + j);
      double tolerance = 4 * (c.k + 2) * std::numeric_limits<float>::epsilon() * r.scale[e];
      ASSERT_NEAR(At(r.c, i, j, c.ldc()), r.want[e], tolerance) << Describe(c) << " at " << i << "," << j;
    }
  }
}

// C's padding still holds its NaN.
template <typename TA, typename TC>
void ExpectPaddingKept(const Case& c, const Result<TA, TC>& r) {
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = c.n; j < c.ldc(); ++j) ASSERT_TRUE(std::isnan(At(r.c, i, j, c.ldc()))) << Describe(c);
  }
}

// bf16 values on a line where neighbouring values are neighbouring integers
// (sign-magnitude bits; +0 and -0 meet at 0).
auto OnLine(Bf16 v) -> int { return (v.bits & 0x8000) ? -(v.bits & 0x7fff) : (v.bits & 0x7fff); }

// A bf16 C is an fp32 result rounded once, to nearest even: ToBf16 of some
// value within fp32 accumulation's error of the exact result. ToBf16 is
// monotone, so it lies between ToBf16 of the error interval's ends: equal to
// ToBf16(exact) or one bf16 ulp off where the interval straddles a rounding
// boundary (or more, where the result nearly cancels). With every value
// exact (`exact`) it is ToBf16(exact) itself.
void ExpectRoundedOnce(const Case& c, const Result<Bf16, Bf16>& r, bool exact) {
  ExpectPaddingKept(c, r);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      size_t e = static_cast<size_t>(i * c.n + j);
      double error = exact ? 0 : 4 * (c.k + 2) * std::numeric_limits<float>::epsilon() * r.scale[e];
      int got = OnLine(r.c[static_cast<size_t>(i * c.ldc() + j)]);
      int low = OnLine(numeric::ToBf16(static_cast<float>(r.want[e] - error)));
      int high = OnLine(numeric::ToBf16(static_cast<float>(r.want[e] + error)));
      ASSERT_TRUE(low <= got && got <= high)
          << Describe(c) << " at " << i << "," << j << ": " << got << " not in [" << low << ", " << high << "]";
    }
  }
}

// Every case of the sweep: four transposes; odd sizes, one element, and
// attention-like blocks; packed, padded, and a head inside 4 heads' rows;
// beta 0 and 1; alpha 1 and a head's 1/sqrt(64).
auto Sweep() -> std::vector<Case> {
  struct Size {
    int64_t m, n, k;
  };
  std::vector<Case> cases;
  for (Size s : {Size{7, 13, 29}, Size{1, 1, 1}, Size{33, 17, 64}, Size{48, 48, 16}}) {
    for (int t = 0; t < 4; ++t) {
      for (int64_t pad : {int64_t{0}, int64_t{5}, 3 * s.k}) {
        for (float beta : {0.0f, 1.0f}) {
          for (float alpha : {1.0f, 0.125f}) cases.push_back({t / 2 == 1, t % 2 == 1, s.m, s.n, s.k, pad, alpha, beta});
        }
      }
    }
  }
  return cases;
}

// Every case of the sweep with `In` operands into an fp32 output: close to
// the reference, the padding untouched.
template <typename In>
void ExpectSweepIntoFp32(uint32_t seed) {
  for (const Case& c : Sweep()) {
    Result<In, float> r = RunCase<In, float>(c, seed += 3, false);
    ExpectFp32Close(c, r);
    ExpectPaddingKept(c, r);
  }
}

TEST(CpuGemm, Fp32MatchesReference) { ExpectSweepIntoFp32<float>(1); }

TEST(CpuGemm, Bf16IntoFp32MatchesReference) { ExpectSweepIntoFp32<Bf16>(100); }

TEST(CpuGemm, Bf16IntoBf16RoundsOnce) {
  uint32_t seed = 200;
  for (const Case& c : Sweep()) ExpectRoundedOnce(c, RunCase<Bf16, Bf16>(c, seed += 3, false), false);
}

// Small integers (times alpha 1 or 1/8) make every product and sum exact in
// fp32, so the one rounding leaves no freedom.
TEST(CpuGemm, Bf16IntoBf16IsExactOnSmallIntegers) {
  uint32_t seed = 300;
  for (const Case& c : Sweep()) ExpectRoundedOnce(c, RunCase<Bf16, Bf16>(c, seed += 3, true), true);
}

// The attention calls its per-head GEMMs inside `omp parallel for`: each
// must still compute its whole block (oneDNN runs it on the calling thread)
// while other threads run theirs, bf16 primitives shared through the cache.
TEST(CpuGemm, NestedInAnOpenMpRegion) {
  std::vector<Case> cases = Sweep();
  // Heads of 256 x 64 inside rows of 4 heads: past the size under which a
  // GEMM runs on one thread anyway, so oneDNN itself must see the region.
  for (int copies = 0; copies < 4; ++copies) {
    cases.push_back({false, true, 256, 256, 64, 3 * 64, 0.125f, 0});
    cases.push_back({false, false, 256, 64, 256, 3 * 64, 1, 1});
  }
  size_t n = cases.size();
  std::vector<Result<float, float>> fp32(n);
  std::vector<Result<Bf16, float>> bf16_fp32(n);
  std::vector<Result<Bf16, Bf16>> bf16(n);
  int team = 0;
#pragma omp parallel for schedule(dynamic) reduction(max : team)
  for (size_t i = 0; i < n; ++i) {
    team = omp_get_num_threads();
    auto seed = static_cast<uint32_t>(400 + 3 * i);
    fp32[i] = RunCase<float, float>(cases[i], seed, false);
    bf16_fp32[i] = RunCase<Bf16, float>(cases[i], seed, false);
    bf16[i] = RunCase<Bf16, Bf16>(cases[i], seed, false);
  }
  EXPECT_EQ(team, omp_get_max_threads());
  for (size_t i = 0; i < n; ++i) {
    ExpectFp32Close(cases[i], fp32[i]);
    ExpectFp32Close(cases[i], bf16_fp32[i]);
    ExpectRoundedOnce(cases[i], bf16[i], false);
  }
}

// oneDNN picks the instruction set, and bf16 takes the widened path exactly
// when that set has no bf16 dot products. ctest runs this binary again with
// ONEDNN_MAX_CPU_ISA at AVX2 and at AVX512_CORE: the limit must hold.
TEST(CpuGemm, PathNamesTheInstructionSet) {
  std::string path = GemmPath();
  EXPECT_NE(path.find("oneDNN"), std::string::npos) << path;
  bool native = path.find("bf16 matmul") != std::string::npos;
  bool widened = path.find("widened") != std::string::npos;
  EXPECT_NE(native, widened) << path;
  const char* limit = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!limit) return;
  EXPECT_TRUE(widened) << path;
  EXPECT_EQ(path.find("bf16:"), std::string::npos) << path;  // no avx512_core_bf16
  EXPECT_EQ(path.find("amx"), std::string::npos) << path;
  if (std::string(limit) == "AVX2") {
    EXPECT_EQ(path.find("avx512"), std::string::npos) << path;
  }
}

auto Bf16s(std::initializer_list<float> values) -> std::vector<Bf16> {
  std::vector<Bf16> out;
  for (float v : values) out.push_back(numeric::ToBf16(v));
  return out;
}

// 257 and 259 lie halfway between bf16 neighbours (256, 258, 260): ties go
// to the even mantissa, 256 and 260; truncation would give 256 and 258,
// rounding half up 258 and 260.
TEST(CpuGemm, Bf16RoundsTiesToEven) {
  std::vector<Bf16> a = Bf16s({1, 1}), b = Bf16s({256, 256, 1, 3}), c = Bf16s({kNan, kNan});
  Gemm(false, false, 1, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(numeric::ToFloat(c[0]), 256.0f);
  EXPECT_EQ(numeric::ToFloat(c[1]), 260.0f);
}

// beta C joins the fp32 sum before the one rounding: 257 + 1 is 258, where
// rounding the product first (257 -> 256) and adding after would give 256.
TEST(CpuGemm, Bf16AddsBetaBeforeRounding) {
  std::vector<Bf16> a = Bf16s({1, 1}), b = Bf16s({256, 1}), c = Bf16s({1});
  Gemm(false, false, 1, 1, 2, 1.0f, a.data(), 2, b.data(), 1, 1.0f, c.data(), 1);
  EXPECT_EQ(numeric::ToFloat(c[0]), 258.0f);
}

TEST(CpuGemm, EmptySumScalesC) {
  std::vector<float> c = {2, 4};
  std::vector<Bf16> cb = Bf16s({2, 4});
  Gemm<float>(false, false, 1, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  Gemm(false, false, 1, 2, 0, 1.0f, static_cast<const Bf16*>(nullptr), 1, nullptr, 2, 0.0f, cb.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{1, 2}));
  EXPECT_EQ(numeric::ToFloat(cb[0]) + numeric::ToFloat(cb[1]), 0.0f);
  Gemm<float>(false, false, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f, nullptr, 2);  // nothing to do
}

TEST(CpuGemm, CountsEveryPath) {
  ResetGemmCounters();
  std::vector<float> af(6, 1), cf(4);
  std::vector<Bf16> ab = Bf16s({1, 1, 1, 1, 1, 1}), cb(4);
  Gemm<float>(false, true, 2, 2, 3, 1.0f, af.data(), 3, af.data(), 3, 0.0f, cf.data(), 2);
  Gemm(false, true, 2, 2, 3, 1.0f, ab.data(), 3, ab.data(), 3, 0.0f, cf.data(), 2);
  Gemm(false, true, 2, 2, 3, 1.0f, ab.data(), 3, ab.data(), 3, 0.0f, cb.data(), 2);
  EXPECT_EQ(GemmFlops(), 3 * 2.0 * 2 * 2 * 3);
  EXPECT_GE(GemmSeconds(), 0.0);
}

}  // namespace
}  // namespace avf::cpu
