// Tests for compiler/units: literal reading, arithmetic, dimension names and
// display (docs/language.md).
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "units/quantity.h"

namespace avf::units {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

auto Int(int64_t v, Dimension d = kCount) -> Quantity { return Quantity::Integer(v, d); }
auto Real(double v, Dimension d = kCount) -> Quantity { return Quantity::Real(v, d); }

// Reads a literal that must be valid.
auto Read(std::string_view text) -> Quantity {
  LiteralResult r = ParseLiteral(text);
  EXPECT_EQ(r.error, LiteralError::kNone) << text;
  return r.value;
}

// ---- Literals: every unit ----------------------------------------------------

struct UnitCase {
  std::string_view suffix;
  Dimension dim;
  int64_t num;
  int64_t den;
};

constexpr UnitCase kExpectedUnits[] = {
    {"k", kCount, 1000, 1},
    {"M", kCount, 1000000, 1},
    {"G", kCount, 1000000000, 1},
    {"T", kCount, 1000000000000, 1},
    {"P", kCount, 1000000000000000, 1},
    {"%", kCount, 1, 100},
    {"B", kBytes, 1, 1},
    {"KB", kBytes, 1000, 1},
    {"MB", kBytes, 1000000, 1},
    {"GB", kBytes, 1000000000, 1},
    {"TB", kBytes, 1000000000000, 1},
    {"PB", kBytes, 1000000000000000, 1},
    {"KiB", kBytes, 1024, 1},
    {"MiB", kBytes, 1 << 20, 1},
    {"GiB", kBytes, 1 << 30, 1},
    {"TiB", kBytes, int64_t{1} << 40, 1},
    {"PiB", kBytes, int64_t{1} << 50, 1},
    {"B/s", kBandwidth, 1, 1},
    {"KB/s", kBandwidth, 1000, 1},
    {"MB/s", kBandwidth, 1000000, 1},
    {"GB/s", kBandwidth, 1000000000, 1},
    {"TB/s", kBandwidth, 1000000000000, 1},
    {"PB/s", kBandwidth, 1000000000000000, 1},
    {"KiB/s", kBandwidth, 1024, 1},
    {"MiB/s", kBandwidth, 1 << 20, 1},
    {"GiB/s", kBandwidth, 1 << 30, 1},
    {"TiB/s", kBandwidth, int64_t{1} << 40, 1},
    {"PiB/s", kBandwidth, int64_t{1} << 50, 1},
    {"b/s", kBandwidth, 1, 8},
    {"Kb/s", kBandwidth, 1000, 8},
    {"Mb/s", kBandwidth, 1000000, 8},
    {"Gb/s", kBandwidth, 1000000000, 8},
    {"Tb/s", kBandwidth, 1000000000000, 8},
    {"Pb/s", kBandwidth, 1000000000000000, 8},
    {"ns", kTime, 1, 1000000000},
    {"us", kTime, 1, 1000000},
    {"ms", kTime, 1, 1000},
    {"s", kTime, 1, 1},
    {"min", kTime, 60, 1},
    {"h", kTime, 3600, 1},
    {"d", kTime, 86400, 1},
    {"FLOP/s", kComputeRate, 1, 1},
    {"MFLOP/s", kComputeRate, 1000000, 1},
    {"GFLOP/s", kComputeRate, 1000000000, 1},
    {"TFLOP/s", kComputeRate, 1000000000000, 1},
    {"PFLOP/s", kComputeRate, 1000000000000000, 1},
    {"EFLOP/s", kComputeRate, 1000000000000000000, 1},
    {"FLOP", kFlops, 1, 1},
    {"GFLOP", kFlops, 1000000000, 1},
    {"TFLOP", kFlops, 1000000000000, 1},
    {"PFLOP", kFlops, 1000000000000000, 1},
    {"EFLOP", kFlops, 1000000000000000000, 1},
    {"W", kPower, 1, 1},
    {"kW", kPower, 1000, 1},
};

TEST(Units, AllUnitsIsExactlyTheSpecList) {
  std::set<std::string_view> listed;
  for (const UnitInfo& u : AllUnits()) {
    EXPECT_TRUE(listed.insert(u.suffix).second) << "duplicate " << u.suffix;
    EXPECT_FALSE(u.description.empty()) << u.suffix;
  }
  std::set<std::string_view> expected;
  for (const UnitCase& c : kExpectedUnits) expected.insert(c.suffix);
  EXPECT_EQ(listed, expected);
  EXPECT_EQ(AllUnits().size(), std::size(kExpectedUnits));
}

TEST(Units, EverySuffixHasItsDimensionAndFactor) {
  for (const UnitCase& c : kExpectedUnits) {
    SCOPED_TRACE(std::string(c.suffix));
    for (int64_t n : {1, 3, 8}) {
      std::string text = std::to_string(n) + std::string(c.suffix);
      LiteralResult r = ParseLiteral(text);
      ASSERT_EQ(r.error, LiteralError::kNone) << text;
      EXPECT_EQ(r.unit, c.suffix);
      EXPECT_EQ(r.unit_offset, std::to_string(n).size());
      EXPECT_EQ(r.value.dimension(), c.dim);
      if ((n * c.num) % c.den == 0) {
        EXPECT_EQ(r.value, Int(n * c.num / c.den, c.dim)) << text;
      } else {
        EXPECT_FALSE(r.value.is_integer()) << text;
        EXPECT_DOUBLE_EQ(r.value.real(), static_cast<double>(n * c.num) / static_cast<double>(c.den)) << text;
      }
    }
  }
}

TEST(Units, AllUnitsReportsTheDimensionItParsesTo) {
  for (const UnitInfo& u : AllUnits()) {
    EXPECT_EQ(Read("1" + std::string(u.suffix)).dimension(), u.dimension) << u.suffix;
  }
}

TEST(Units, SuffixesAreCaseSensitive) {
  for (std::string_view text : {"1kb", "1gib", "1S", "1Ms", "1K", "1m", "1w", "1flop/s", "1GB/S"}) {
    EXPECT_EQ(ParseLiteral(text).error, LiteralError::kUnknownUnit) << text;
  }
  EXPECT_EQ(Read("1M"), Int(1000000));
  EXPECT_EQ(Read("1ms"), Real(0.001, kTime));
}

// ---- Literals: values ---------------------------------------------------------

TEST(Literals, DocumentedExamples) {
  EXPECT_EQ(Read("80GiB"), Int(85899345920, kBytes));
  EXPECT_EQ(Read("30min"), Int(1800, kTime));
  EXPECT_EQ(Read("2us"), Real(2e-6, kTime));
  EXPECT_EQ(Read("400Gb/s"), Int(50000000000, kBandwidth));
  EXPECT_EQ(Read("900GB/s"), Int(900000000000, kBandwidth));
  EXPECT_EQ(Read("989TFLOP/s"), Int(989000000000000, kComputeRate));
  EXPECT_EQ(Read("4.2T"), Int(4200000000000));
  EXPECT_EQ(Read("100k"), Int(100000));
  EXPECT_EQ(Read("42"), Int(42));
  EXPECT_EQ(Read("3.5"), Real(3.5));
  EXPECT_EQ(Read("3e-4"), Real(3e-4));
  EXPECT_EQ(Read("1_000_000"), Int(1000000));
  EXPECT_EQ(Read("93%"), Real(0.93));
}

TEST(Literals, ExactWhereTheValueIsWhole) {
  EXPECT_EQ(Read("400Gb/s"), Read("50GB/s"));
  EXPECT_EQ(Read("1KiB"), Int(1024, kBytes));
  EXPECT_EQ(Read("1.5KiB"), Int(1536, kBytes));
  EXPECT_EQ(Read("0.1k"), Int(100));
  EXPECT_EQ(Read("2.039TB/s"), Int(2039000000000, kBandwidth));
  EXPECT_EQ(Read("10.2kW"), Int(10200, kPower));
  EXPECT_EQ(Read("1000000000ns"), Int(1, kTime));
  EXPECT_EQ(Read("1500ms"), Real(1.5, kTime));
  EXPECT_EQ(Read("8b/s"), Int(1, kBandwidth));
  EXPECT_EQ(Read("1b/s"), Real(0.125, kBandwidth));
  EXPECT_EQ(Read("0.5b/s"), Real(0.0625, kBandwidth));
  EXPECT_EQ(Read("100%"), Int(1));
  EXPECT_EQ(Read("250%"), Real(2.5));
  EXPECT_EQ(Read("1.0"), Int(1));
  EXPECT_EQ(Read("0.0"), Int(0));
  EXPECT_EQ(Read("0"), Int(0));
  EXPECT_EQ(Read("007"), Int(7));
  EXPECT_EQ(Read("0.5B"), Real(0.5, kBytes));
  EXPECT_EQ(Read("1EFLOP"), Int(1000000000000000000, kFlops));
  EXPECT_EQ(Read("0.000001EFLOP/s"), Int(1000000000000, kComputeRate));
  EXPECT_EQ(Read("1.00000000000000000000000000000000000000000000"), Int(1));
  EXPECT_EQ(Read("100000000000000000000000000000000000000000000e-44"), Int(1));
  // 46 significant digits: not exactly an integer, so a real.
  EXPECT_EQ(Read("1.000000000000000000000000000000000000000000001"), Real(1.0));
}

TEST(Literals, Exponents) {
  EXPECT_EQ(Read("1e3"), Int(1000));
  EXPECT_EQ(Read("1E3"), Int(1000));
  EXPECT_EQ(Read("1e+3"), Int(1000));
  EXPECT_EQ(Read("2.5e3"), Int(2500));
  EXPECT_EQ(Read("25e-1"), Real(2.5));
  EXPECT_EQ(Read("1e1_0"), Int(10000000000));
  EXPECT_EQ(Read("1e18"), Int(1000000000000000000));
  EXPECT_EQ(Read("1e19"), Real(1e19));  // an exponent literal is a real when too big
  EXPECT_EQ(Read("1e-999"), Real(0.0));
  EXPECT_EQ(Read("0e999999999999999999999"), Int(0));
  EXPECT_EQ(Read("1e3s"), Int(1000, kTime));
  EXPECT_EQ(Read("5e-3s"), Real(0.005, kTime));
  EXPECT_EQ(Read("2EFLOP/s"), Int(2000000000000000000, kComputeRate));
}

TEST(Literals, SuffixSplitting) {
  struct Case {
    std::string_view text;
    size_t offset;
    std::string_view unit;
  };
  for (const Case& c :
       {Case{"80GiB", 2, "GiB"}, Case{"4.2T", 3, "T"}, Case{"1E5GB", 3, "GB"}, Case{"3e-4", 4, ""}, Case{"42", 2, ""},
        Case{"1_000GB", 5, "GB"}, Case{"2e", 1, "e"}, Case{"2e+", 1, "e+"}, Case{"2e-s", 1, "e-s"}, Case{"5.", 1, "."},
        Case{"5.s", 1, ".s"}, Case{"1__000", 1, "__000"}, Case{"1_", 1, "_"}, Case{"1._5", 1, "._5"},
        Case{"93%", 2, "%"}, Case{"1.5e3.2", 5, ".2"}, Case{"2EFLOP", 1, "EFLOP"}}) {
    LiteralResult r = ParseLiteral(c.text);
    EXPECT_EQ(r.unit_offset, c.offset) << c.text;
    EXPECT_EQ(r.unit, c.unit) << c.text;
  }
  EXPECT_EQ(Read("1E5GB"), Int(100000000000000, kBytes));
  EXPECT_EQ(ParseLiteral("2e").error, LiteralError::kUnknownUnit);
  EXPECT_EQ(Read("1_0.2_5"), Real(10.25));
  EXPECT_EQ(Read("1_000_000GiB"), Int(int64_t{1000000} << 30, kBytes));
}

TEST(Literals, Int64Boundary) {
  EXPECT_EQ(Read("9223372036854775807"), Int(kMax));
  EXPECT_EQ(Read("9_223_372_036_854_775_807"), Int(kMax));
  EXPECT_EQ(Read("9223372036854775807B"), Int(kMax, kBytes));
  EXPECT_EQ(Read("9223372036854775807.0"), Int(kMax));
  EXPECT_EQ(Read("8191PiB"), Int(8191 * (int64_t{1} << 50), kBytes));
  for (std::string_view text : {"9223372036854775808", "9223372036854775808B", "10000000P", "8192PiB",
                                "99999999999999999999999999999999999999999999", "10000000000EFLOP"}) {
    LiteralResult r = ParseLiteral(text);
    EXPECT_EQ(r.error, LiteralError::kTooLarge) << text;
    EXPECT_FALSE(r.value.is_integer()) << text;
  }
  // Not written as integers, or a fractional unit: reals, not errors.
  EXPECT_EQ(Read("9223372036854775808.0"), Real(9223372036854775808.0));
  EXPECT_EQ(Read("9.3e18"), Real(9.3e18));
  EXPECT_EQ(Read("10000000000000000000%"), Int(100000000000000000));
  EXPECT_EQ(Read("100000000000000000000000%"), Real(1e21));
  EXPECT_EQ(Read("9223372036854775808ns"), Real(9223372036.854775808, kTime));
}

TEST(Literals, NotFinite) {
  for (std::string_view text : {"1e999", "1e309", "1e99999999999999999999", "1e300EFLOP", "2e308GiB"}) {
    EXPECT_EQ(ParseLiteral(text).error, LiteralError::kNotFinite) << text;
  }
  EXPECT_EQ(Read("1e308"), Real(1e308));
}

// ---- Literals: unknown units --------------------------------------------------

TEST(Literals, UnknownUnitReportsTheSuffix) {
  LiteralResult r = ParseLiteral("80GiBs");
  EXPECT_EQ(r.error, LiteralError::kUnknownUnit);
  EXPECT_EQ(r.unit, "GiBs");
  EXPECT_EQ(r.unit_offset, 2u);
  EXPECT_EQ(r.suggestion, "GiB");
  EXPECT_EQ(r.value, Quantity{});
}

TEST(Literals, Suggestions) {
  struct Case {
    std::string_view text;
    std::string_view suggestion;
  };
  for (const Case& c : {Case{"1GiBs", "GiB"},       Case{"1gib", "GiB"},      Case{"1tflop/s", "TFLOP/s"},
                        Case{"1gb", "GB"},          Case{"1KIB", "KiB"},      Case{"1Gbps", "Gb/s"},
                        Case{"1GBps", "GB/s"},      Case{"1mb/s", "Mb/s"},    Case{"1mins", "min"},
                        Case{"1hr", "h"},           Case{"1S", "s"},          Case{"1kw", "kW"},
                        Case{"1TFLOPS", "TFLOP/s"}, Case{"1flops", "FLOP/s"}, Case{"1MBps", "MB/s"},
                        Case{"1GiBps", "GiB/s"},    Case{"1e", ""},           Case{"1x", ""},
                        Case{"1xyz", ""},           Case{"1seconds", ""},     Case{"1__000", ""}}) {
    LiteralResult r = ParseLiteral(c.text);
    EXPECT_EQ(r.error, LiteralError::kUnknownUnit) << c.text;
    EXPECT_EQ(r.suggestion, c.suggestion) << c.text;
  }
}

TEST(Literals, TextWithoutDigits) {
  for (std::string_view text : {"", "GB", ".5", "_1", "e5"}) {
    LiteralResult r = ParseLiteral(text);
    EXPECT_EQ(r.error, LiteralError::kUnknownUnit) << text;
    EXPECT_EQ(r.unit_offset, 0u) << text;
    EXPECT_EQ(r.unit, text);
    EXPECT_EQ(r.suggestion, "");
  }
}

// Random tokens over the number alphabet: no crash, and the result is
// consistent with the token text.
TEST(Literals, RandomTokensAreHandledConsistently) {
  constexpr std::string_view kAlphabet = "0123456789_.eE+-kMGTPBiKb/s%";
  uint64_t state = 12345;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    for (int n = static_cast<int>(state % 12) + 1; n > 0; --n) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      text.push_back(kAlphabet[(state >> 33) % kAlphabet.size()]);
    }
    LiteralResult r = ParseLiteral(text);
    ASSERT_LE(r.unit_offset, text.size()) << text;
    EXPECT_EQ(r.unit, text.substr(r.unit_offset)) << text;
    if (r.error == LiteralError::kNone) {
      EXPECT_TRUE(r.value.is_integer() || std::isfinite(r.value.real())) << text;
      EXPECT_TRUE(r.value.is_integer() || r.value.real() >= 0) << text;
    }
  }
}

// ---- Arithmetic ---------------------------------------------------------------

TEST(Arithmetic, AddAndSubtract) {
  EXPECT_EQ(Add(Int(2, kBytes), Int(3, kBytes)).value, Int(5, kBytes));
  EXPECT_EQ(Subtract(Int(2, kTime), Int(3, kTime)).value, Int(-1, kTime));
  EXPECT_EQ(Add(Real(0.5), Int(1)).value, Real(1.5));
  EXPECT_EQ(Add(Real(0.5), Real(0.5)).value, Real(1.0));  // reals stay real
  EXPECT_EQ(Add(Int(kMax), Int(1)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Add(Int(kMin), Int(-1)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Subtract(Int(kMin), Int(1)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Subtract(Int(0), Int(kMin)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Add(Int(kMax), Int(kMin)).value, Int(-1));
  EXPECT_EQ(Add(Real(1e308), Real(1e308)).error, ArithmeticError::kNotFinite);
}

TEST(Arithmetic, AddNeedsTheSameDimension) {
  EXPECT_EQ(Add(Int(1, kBytes), Int(1, kTime)).error, ArithmeticError::kDimensionMismatch);
  EXPECT_EQ(Subtract(Int(1, kBandwidth), Int(1, kBytes)).error, ArithmeticError::kDimensionMismatch);
  EXPECT_EQ(Add(Int(1), Real(0.5, kTime)).error, ArithmeticError::kDimensionMismatch);
  EXPECT_EQ(Add(Read("1GiB"), Read("1GB")).value, Int((1 << 30) + 1000000000, kBytes));
}

TEST(Arithmetic, MultiplyAddsExponents) {
  EXPECT_EQ(Multiply(Int(3), Int(4)).value, Int(12));
  EXPECT_EQ(Multiply(Int(8, kBytes), Int(4)).value, Int(32, kBytes));
  EXPECT_EQ(Multiply(Int(2, kBandwidth), Int(3, kTime)).value, Int(6, kBytes));
  EXPECT_EQ(Multiply(Int(2, kComputeRate), Int(3, kTime)).value, Int(6, kFlops));
  EXPECT_EQ(Multiply(Int(2, kBytes), Int(3, kBytes)).value.dimension(), (Dimension{2, 0, 0, 0}));
  EXPECT_EQ(Multiply(Real(0.5), Int(3, kTime)).value, Real(1.5, kTime));
  EXPECT_EQ(Multiply(Real(2.5), Int(2)).value, Real(5.0));
  EXPECT_EQ(Multiply(Int(kMax), Int(2)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Multiply(Int(kMin), Int(-1)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Multiply(Int(int64_t{1} << 32), Int(int64_t{1} << 31)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Multiply(Read("80GiB"), Int(1000000000)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Multiply(Real(1e200), Real(1e200)).error, ArithmeticError::kNotFinite);
  EXPECT_EQ(Multiply(Int(1, Dimension{127, 0, 0, 0}), Int(1, kBytes)).error, ArithmeticError::kOverflow);
}

TEST(Arithmetic, DivideSubtractsExponents) {
  EXPECT_EQ(Divide(Read("80GB"), Read("2s")).value, Int(40000000000, kBandwidth));
  EXPECT_EQ(Divide(Int(100, kBytes), Int(50, kBandwidth)).value, Int(2, kTime));
  EXPECT_EQ(Divide(Int(100, kBytes), Int(50, kBytes)).value, Int(2));
  EXPECT_EQ(Divide(Int(100, kFlops), Int(50, kComputeRate)).value, Int(2, kTime));
  EXPECT_EQ(Divide(Int(1), Int(1, kTime)).value.dimension(), (Dimension{0, -1, 0, 0}));
}

TEST(Arithmetic, IntegerDivisionIsExactOrReal) {
  EXPECT_EQ(Divide(Int(12), Int(4)).value, Int(3));
  EXPECT_EQ(Divide(Int(-12), Int(4)).value, Int(-3));
  EXPECT_EQ(Divide(Int(7), Int(2)).value, Real(3.5));
  EXPECT_EQ(Divide(Int(-7), Int(2)).value, Real(-3.5));
  EXPECT_EQ(Divide(Int(1), Int(3)).value, Real(1.0 / 3.0));
  EXPECT_EQ(Divide(Int(kMax), Int(2)).value, Real(4611686018427387903.5));
  EXPECT_EQ(Divide(Int(kMax), Int(kMax)).value, Int(1));
  EXPECT_EQ(Divide(Int(kMin), Int(-1)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Divide(Int(kMin), Int(1)).value, Int(kMin));
  EXPECT_EQ(Divide(Real(3.0), Int(2)).value, Real(1.5));
}

TEST(Arithmetic, DivisionByZero) {
  EXPECT_EQ(Divide(Int(1), Int(0)).error, ArithmeticError::kDivisionByZero);
  EXPECT_EQ(Divide(Int(1, kBytes), Int(0, kTime)).error, ArithmeticError::kDivisionByZero);
  EXPECT_EQ(Divide(Real(1.5), Real(0.0)).error, ArithmeticError::kDivisionByZero);
  EXPECT_EQ(Divide(Int(0), Real(-0.0)).error, ArithmeticError::kDivisionByZero);
  EXPECT_EQ(Divide(Real(1e300), Real(1e-300)).error, ArithmeticError::kNotFinite);
}

TEST(Arithmetic, Negate) {
  EXPECT_EQ(Negate(Int(5, kTime)).value, Int(-5, kTime));
  EXPECT_EQ(Negate(Int(kMax)).value, Int(-kMax));
  EXPECT_EQ(Negate(Int(kMin)).error, ArithmeticError::kOverflow);
  EXPECT_EQ(Negate(Real(0.25, kBytes)).value, Real(-0.25, kBytes));
}

// ---- Names and text -------------------------------------------------------------

TEST(Names, DimensionNames) {
  EXPECT_EQ(DimensionName(kCount), "count");
  EXPECT_EQ(DimensionName(kBytes), "bytes");
  EXPECT_EQ(DimensionName(kTime), "time");
  EXPECT_EQ(DimensionName(kBandwidth), "bandwidth");
  EXPECT_EQ(DimensionName(kComputeRate), "compute rate");
  EXPECT_EQ(DimensionName(kFlops), "FLOPs");
  EXPECT_EQ(DimensionName(kPower), "power");
  EXPECT_EQ(DimensionName({2, -1, 0, 0}), "bytes²·s⁻¹");
  EXPECT_EQ(DimensionName({0, -1, 0, 0}), "s⁻¹");
  EXPECT_EQ(DimensionName({1, 0, 0, 1}), "bytes·W");
  EXPECT_EQ(DimensionName({-12, 0, 1, 0}), "bytes⁻¹²·FLOP");
  EXPECT_EQ(DimensionName({0, 2, 0, -1}), "s²·W⁻¹");
  EXPECT_EQ(DimensionName({0, 0, 10, 0}), "FLOP¹⁰");
}

TEST(Names, ValueText) {
  EXPECT_EQ(Int(80000000000, kBytes).ValueText(), "80000000000");
  EXPECT_EQ(Int(-3).ValueText(), "-3");
  EXPECT_EQ(Int(kMin).ValueText(), "-9223372036854775808");
  EXPECT_EQ(Real(0.93).ValueText(), "0.93");
  EXPECT_EQ(Real(2e-6, kTime).ValueText(), "2e-06");
  EXPECT_EQ(Real(0.1 + 0.2).ValueText(), "0.30000000000000004");
  EXPECT_EQ(Real(-2.5).ValueText(), "-2.5");
  for (double v : {0.93, 2e-6, 1.0 / 3.0, 1e300, 123456.789}) {
    EXPECT_EQ(std::stod(Real(v).ValueText()), v);
  }
}

TEST(Display, DocumentedExamples) {
  EXPECT_EQ(Int(85899345920, kBytes).DisplayText(), "80GiB");
  EXPECT_EQ(Int(2039000000000, kBandwidth).DisplayText(), "2.039TB/s");
  EXPECT_EQ(Int(312000000000000, kComputeRate).DisplayText(), "312TFLOP/s");
  EXPECT_EQ(Int(1800, kTime).DisplayText(), "30min");
  EXPECT_EQ(Int(4200000000000).DisplayText(), "4.2T");
  EXPECT_EQ(Int(80).DisplayText(), "80");
}

TEST(Display, ChoosesReadableUnits) {
  struct Case {
    Quantity q;
    std::string_view text;
  };
  for (const Case& c : {
           Case{Int(1000), "1000"},
           Case{Int(1500), "1500"},
           Case{Int(100000), "100000"},
           Case{Int(1000000), "1M"},
           Case{Real(0.0003), "0.0003"},
           Case{Int(1000000000000000000), "1000P"},
           Case{Int(0), "0"},
           Case{Real(0.93), "0.93"},
           Case{Int(80000000000, kBytes), "80GB"},
           Case{Int(1536, kBytes), "1.5KiB"},
           Case{Int(1000000, kBytes), "1MB"},
           Case{Int(500, kBytes), "500B"},
           Case{Int(0, kBytes), "0B"},
           Case{Int(50000000000, kBandwidth), "50GB/s"},
           Case{Int(12500000000, kBandwidth), "100Gb/s"},
           Case{Int(1 << 30, kBandwidth), "1GiB/s"},
           Case{Real(0.125, kBandwidth), "1b/s"},
           Case{Int(0, kTime), "0s"},
           Case{Int(1, kTime), "1s"},
           Case{Int(60, kTime), "1min"},
           Case{Int(90, kTime), "90s"},
           Case{Int(5400, kTime), "90min"},
           Case{Int(7200, kTime), "2h"},
           Case{Int(86400, kTime), "1d"},
           Case{Int(90000, kTime), "25h"},
           Case{Real(2e-6, kTime), "2us"},
           Case{Real(0.0015, kTime), "1.5ms"},
           Case{Real(1.5, kTime), "1.5s"},
           Case{Real(1800.0, kTime), "30min"},
           Case{Real(1e-12, kTime), "0.001ns"},
           Case{Real(1e-20, kTime), "1e-11ns"},
           Case{Int(700, kPower), "700W"},
           Case{Int(10200, kPower), "10.2kW"},
           Case{Int(1000000000000000000, kFlops), "1EFLOP"},
           Case{Int(123, kFlops), "123FLOP"},
           Case{Int(5, kComputeRate), "5FLOP/s"},
           Case{Real(1e30), "1e30"},
           Case{Real(1e25, kBytes), "1e10PB"},
           Case{Int(-85899345920, kBytes), "-80GiB"},
           Case{Real(-2e-6, kTime), "-2us"},
           Case{Int(kMin, kBytes), "-8192PiB"},
           Case{Int(3, {2, 0, 0, 0}), "3 bytes²"},
           Case{Real(0.5, {0, -1, 0, 0}), "0.5 s⁻¹"},
       }) {
    EXPECT_EQ(c.q.DisplayText(), c.text) << c.q.ValueText() << " " << DimensionName(c.q.dimension());
  }
}

// Integers chosen to exercise every unit and boundary, plus pseudo-random ones.
auto RoundTripValues() -> std::vector<int64_t> {
  std::vector<int64_t> values = {0,
                                 1,
                                 7,
                                 59,
                                 60,
                                 61,
                                 999,
                                 1000,
                                 1001,
                                 1023,
                                 1024,
                                 1536,
                                 3600,
                                 86399,
                                 86400,
                                 1000000007,
                                 kMax,
                                 kMax - 1,
                                 kMax / 1024 * 1024};
  for (int shift = 0; shift < 63; ++shift) {
    values.push_back(int64_t{1} << shift);
    if (shift < 62) values.push_back((int64_t{1} << shift) * 3 / 2);
  }
  for (int64_t p = 1; p <= kMax / 10; p *= 10) {
    values.push_back(p);
    values.push_back(p * 8);
    values.push_back(p * 37 / 10 + 3);
  }
  uint64_t state = 987654321;
  for (int i = 0; i < 3000; ++i) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    values.push_back(static_cast<int64_t>(state >> (1 + i % 60)));
  }
  return values;
}

TEST(Display, IntegersRoundTripThroughParseLiteral) {
  for (Dimension dim : {kCount, kBytes, kTime, kBandwidth, kComputeRate, kFlops, kPower}) {
    for (int64_t v : RoundTripValues()) {
      Quantity q = Int(v, dim);
      std::string text = q.DisplayText();
      LiteralResult r = ParseLiteral(text);
      ASSERT_EQ(r.error, LiteralError::kNone) << text;
      ASSERT_EQ(r.value, q) << text << " from " << v << " " << DimensionName(dim);
      ASSERT_LE(text.size(), q.ValueText().size() + 8) << text;
    }
  }
}

TEST(Display, RealsReadBackToTheSameDouble) {
  for (Dimension dim : {kCount, kBytes, kTime, kBandwidth, kComputeRate, kFlops, kPower}) {
    for (double v : {0.93, 2e-6, 1.0 / 3.0, 1e-300, 4.9e-324, 1e300, 1.7976931348623157e308, 12345.678, 0.1 + 0.2, 1e19,
                     9.3e18, 1.5, 2.0 / 3.0 * 3600}) {
      Quantity q = Real(v, dim);
      std::string text = q.DisplayText();
      LiteralResult r = ParseLiteral(text);
      ASSERT_EQ(r.error, LiteralError::kNone) << text;
      EXPECT_EQ(r.value.dimension(), dim) << text;
      EXPECT_EQ(r.value.real(), v) << text;
    }
  }
}

}  // namespace
}  // namespace avf::units
