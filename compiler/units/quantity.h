// Quantities: a number with a physical dimension, checked by the compiler
// (docs/language.md, Quantities and units). Values stay exact 64-bit integers while they can (byte counts,
// token counts, durations in nanoseconds) and become doubles only when a
// result is not integral; integer fields reject non-integral results rather
// than round.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace avf::units {

// Exponents of the base dimensions: bytes, seconds, FLOPs, watts. A count is
// all zeros; bandwidth is bytes·s⁻¹; a compute rate is FLOP·s⁻¹.
struct Dimension {
  int8_t bytes = 0;
  int8_t time = 0;
  int8_t flop = 0;
  int8_t power = 0;

  friend auto operator==(const Dimension&, const Dimension&) -> bool = default;
  auto IsCount() const -> bool { return *this == Dimension{}; }
};

inline constexpr Dimension kCount{};
inline constexpr Dimension kBytes{1, 0, 0, 0};
inline constexpr Dimension kTime{0, 1, 0, 0};
inline constexpr Dimension kBandwidth{1, -1, 0, 0};
inline constexpr Dimension kFlops{0, 0, 1, 0};
inline constexpr Dimension kComputeRate{0, -1, 1, 0};
inline constexpr Dimension kPower{0, 0, 0, 1};

// "count", "bytes", "time", "bandwidth", "compute rate", "FLOPs", "power";
// other combinations are spelled out, e.g. "bytes²·s⁻¹": the bases bytes, s,
// FLOP, W in that order, joined by "·" (U+00B7), exponents other than 1 in
// Unicode superscripts with "⁻" for negatives.
auto DimensionName(Dimension d) -> std::string;

// Values are in base units: bytes (B), seconds (s), FLOPs, watts (W). So
// `80GiB` is the integer 85899345920, `30min` the integer 1800, `2us` the real
// 2e-06, `400Gb/s` the integer 50000000000 (bytes per second).
class Quantity {
 public:
  Quantity() = default;
  static auto Integer(int64_t value, Dimension dim = kCount) -> Quantity;
  static auto Real(double value, Dimension dim = kCount) -> Quantity;

  auto dimension() const -> Dimension { return dim_; }
  // True when the value is exactly an integer that fits in int64_t. A real
  // stays real even when its double is whole (2.5 * 2 is the real 5): only
  // exact integer arithmetic and exact literals produce integers.
  auto is_integer() const -> bool { return is_integer_; }
  auto integer() const -> int64_t { return is_integer_ ? int_ : 0; }  // only if is_integer()
  auto real() const -> double { return is_integer_ ? static_cast<double>(int_) : real_; }

  // Shortest decimal text of the value in base units ("80000000000",
  // "0.93", "1e-06"), without a unit.
  auto ValueText() const -> std::string;
  // The value with the most readable unit of its dimension: "80GiB",
  // "2.039TB/s", "312TFLOP/s", "30min", "4.2T". Stable across platforms.
  // Within a family of units (decimal bytes, binary bytes, bits/s, ...) the
  // largest unit showing a value >= 1 is used; bytes and bandwidth take the
  // shortest family text (ties go to GiB-style for bytes, to GB/s-style for
  // bandwidth); a count is
  // plain unless a k…P form is shorter; time uses the largest of s/min/h/d
  // that is whole, else ns/us/ms/s. Zero is "0" plus the base unit, a negative
  // value is "-" plus its magnitude's text, and a dimension without units is
  // ValueText() + " " + DimensionName() ("3 bytes²"). For non-negative values
  // ParseLiteral(DisplayText()) gives back the same quantity (reals: the
  // same double).
  auto DisplayText() const -> std::string;

  friend auto operator==(const Quantity& a, const Quantity& b) -> bool {
    if (a.dim_ != b.dim_ || a.is_integer_ != b.is_integer_) return false;
    return a.is_integer_ ? a.int_ == b.int_ : a.real_ == b.real_;
  }

 private:
  Dimension dim_{};
  bool is_integer_ = true;
  // One or the other, as is_integer_ says: the front end keeps millions of
  // quantities, so they take 16 bytes rather than 24.
  union {
    int64_t int_ = 0;
    double real_;
  };
};

enum class ArithmeticError {
  kNone,
  kDimensionMismatch,  // + or - on different dimensions
  kOverflow,           // the exact integer result does not fit in int64_t
  kDivisionByZero,
  kNotFinite,  // a real result is inf or NaN
};

struct ArithmeticResult {
  Quantity value;
  ArithmeticError error = ArithmeticError::kNone;
};

// Exact where both sides are integers; a quotient that is not whole becomes a
// real. Dimensions add (for *) and subtract (for /) their exponents; an
// exponent beyond int8_t is reported as kOverflow. Results that carry an
// error have a default (zero count) value.
auto Add(const Quantity& a, const Quantity& b) -> ArithmeticResult;
auto Subtract(const Quantity& a, const Quantity& b) -> ArithmeticResult;
auto Multiply(const Quantity& a, const Quantity& b) -> ArithmeticResult;
auto Divide(const Quantity& a, const Quantity& b) -> ArithmeticResult;
auto Negate(const Quantity& a) -> ArithmeticResult;

// Reading a NUMBER token such as `80GiB`, `4.2T`, `3e-4`, `1_000_000`,
// `400Gb/s`, `93%`: DIGITS ('.' DIGITS)? ([eE][+-]?DIGITS)? UNIT?, where
// DIGITS may have single `_` between digits. Everything after the longest
// such number is the suffix (`2e` has the unit "e", `1__0` the unit "__0"),
// so malformed tails and text without digits come back as kUnknownUnit. The
// value is exact, an Integer, whenever it is a whole number in int64_t (up to
// 38 significant digits are read exactly: `4.2T`, `1.5KiB`, `8b/s`), else the
// nearest double (`2us`, `93%`).
// On kUnknownUnit the value is a default (zero count); on kTooLarge and
// kNotFinite it is the real approximation (inf for kNotFinite).
enum class LiteralError {
  kNone,
  kUnknownUnit,  // `suggestion` may name the closest known unit
  kTooLarge,     // an integer literal beyond int64_t: no '.', no exponent,
                 // a whole unit factor (`9223372036854775808`, `10000000P`)
  kNotFinite,    // a real literal beyond double
};

struct LiteralResult {
  Quantity value;
  LiteralError error = LiteralError::kNone;
  size_t unit_offset = 0;  // where the suffix starts in the token text
  std::string unit;        // the suffix as written ("" for none)
  std::string suggestion;  // closest known unit for kUnknownUnit, or ""
                           // (`GiBs`→`GiB`, `gib`→`GiB`, `Gbps`→`Gb/s`)
};

auto ParseLiteral(std::string_view text) -> LiteralResult;

// A byte literal with its prefix taken from the other system: `7.3TB` ->
// `7.3TiB`, `2TiB` -> `2TB`. nullopt when `text` is not one number with a
// prefixed byte unit. `df -h` and `free -h` print powers of 1024 as `7.3T`, so
// a figure copied from them and written `7.3TB` is 10% short; the twin is what
// a unit hint offers.
struct PrefixTwin {
  std::string text;     // "7.3TiB"
  Quantity value;       // its bytes
  bool binary = false;  // the twin's prefix is binary (KiB ... PiB)
};
auto OtherBytePrefix(std::string_view text) -> std::optional<PrefixTwin>;

// Every unit suffix the language knows (units/units.def, in file order),
// for documentation and tests. The empty suffix (a plain count) is not
// listed.
struct UnitInfo {
  std::string_view suffix;
  Dimension dimension;
  std::string_view description;
};
auto AllUnits() -> const std::vector<UnitInfo>&;

}  // namespace avf::units
