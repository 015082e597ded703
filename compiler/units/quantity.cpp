#include "units/quantity.h"

#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace avf::units {

namespace {

struct NamedDimension {
  Dimension dim;
  std::string_view name;
};
constexpr NamedDimension kNamedDimensions[] = {
    {kCount, "count"}, {kBytes, "bytes"}, {kTime, "time"}, {kBandwidth, "bandwidth"}, {kComputeRate, "compute rate"},
    {kFlops, "FLOPs"}, {kPower, "power"},
};

// Superscript digits are multi-byte UTF-8, so they are kept as strings.
constexpr std::string_view kSuperscriptDigits[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};

auto Superscript(int exponent) -> std::string {
  std::string out = exponent < 0 ? "⁻" : "";
  for (char c : std::to_string(exponent < 0 ? -exponent : exponent)) out += kSuperscriptDigits[c - '0'];
  return out;
}

auto Fail(ArithmeticError error) -> ArithmeticResult { return {Quantity{}, error}; }

auto RealResult(double value, Dimension dim) -> ArithmeticResult {
  if (!std::isfinite(value)) return Fail(ArithmeticError::kNotFinite);
  return {Quantity::Real(value, dim)};
}

// Exponents are int8_t; a product like bytes¹²⁸ cannot be represented and is
// reported as an overflow rather than wrapping into a different dimension.
auto CombineExponent(int a, int b, int8_t* out) -> bool {
  int sum = a + b;
  if (sum < std::numeric_limits<int8_t>::min() || sum > std::numeric_limits<int8_t>::max()) return false;
  *out = static_cast<int8_t>(sum);
  return true;
}

auto CombineDimensions(Dimension a, Dimension b, int sign, Dimension* out) -> bool {
  return CombineExponent(a.bytes, sign * b.bytes, &out->bytes) && CombineExponent(a.time, sign * b.time, &out->time) &&
         CombineExponent(a.flop, sign * b.flop, &out->flop) && CombineExponent(a.power, sign * b.power, &out->power);
}

// a / b for a quotient that is not whole. Only IEEE basic operations on
// doubles are used, so the result is the same on every platform.
auto InexactQuotient(int64_t a, int64_t b) -> double {
  constexpr int64_t kExact = int64_t{1} << 53;  // every integer up to here is a double
  if (a >= -kExact && a <= kExact && b >= -kExact && b <= kExact) {
    return static_cast<double>(a) / static_cast<double>(b);
  }
  return static_cast<double>(a / b) + static_cast<double>(a % b) / static_cast<double>(b);
}

auto IsZero(const Quantity& q) -> bool { return q.is_integer() ? q.integer() == 0 : q.real() == 0.0; }

}  // namespace

auto DimensionName(Dimension d) -> std::string {
  for (const NamedDimension& named : kNamedDimensions) {
    if (named.dim == d) return std::string(named.name);
  }
  const std::pair<int, std::string_view> parts[] = {
      {d.bytes, "bytes"}, {d.time, "s"}, {d.flop, "FLOP"}, {d.power, "W"}};
  std::string out;
  for (const auto& [exponent, base] : parts) {
    if (exponent == 0) continue;
    if (!out.empty()) out += "·";
    out += base;
    if (exponent != 1) out += Superscript(exponent);
  }
  return out;
}

auto Quantity::Integer(int64_t value, Dimension dim) -> Quantity {
  Quantity q;
  q.dim_ = dim;
  q.is_integer_ = true;
  q.int_ = value;
  return q;
}

auto Quantity::Real(double value, Dimension dim) -> Quantity {
  Quantity q;
  q.dim_ = dim;
  q.is_integer_ = false;
  q.real_ = value;
  return q;
}

auto Quantity::ValueText() const -> std::string {
  return is_integer_ ? fmt::format("{}", int_) : fmt::format("{}", real_);
}

auto Add(const Quantity& a, const Quantity& b) -> ArithmeticResult {
  if (a.dimension() != b.dimension()) return Fail(ArithmeticError::kDimensionMismatch);
  if (a.is_integer() && b.is_integer()) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a.integer(), b.integer(), &sum)) return Fail(ArithmeticError::kOverflow);
    return {Quantity::Integer(sum, a.dimension())};
  }
  return RealResult(a.real() + b.real(), a.dimension());
}

auto Subtract(const Quantity& a, const Quantity& b) -> ArithmeticResult {
  if (a.dimension() != b.dimension()) return Fail(ArithmeticError::kDimensionMismatch);
  if (a.is_integer() && b.is_integer()) {
    int64_t difference = 0;
    if (__builtin_sub_overflow(a.integer(), b.integer(), &difference)) {
      return Fail(ArithmeticError::kOverflow);
    }
    return {Quantity::Integer(difference, a.dimension())};
  }
  return RealResult(a.real() - b.real(), a.dimension());
}

auto Multiply(const Quantity& a, const Quantity& b) -> ArithmeticResult {
  Dimension dim;
  if (!CombineDimensions(a.dimension(), b.dimension(), +1, &dim)) return Fail(ArithmeticError::kOverflow);
  if (a.is_integer() && b.is_integer()) {
    int64_t product = 0;
    if (__builtin_mul_overflow(a.integer(), b.integer(), &product)) return Fail(ArithmeticError::kOverflow);
    return {Quantity::Integer(product, dim)};
  }
  return RealResult(a.real() * b.real(), dim);
}

auto Divide(const Quantity& a, const Quantity& b) -> ArithmeticResult {
  Dimension dim;
  if (!CombineDimensions(a.dimension(), b.dimension(), -1, &dim)) return Fail(ArithmeticError::kOverflow);
  if (IsZero(b)) return Fail(ArithmeticError::kDivisionByZero);
  if (!a.is_integer() || !b.is_integer()) return RealResult(a.real() / b.real(), dim);
  int64_t x = a.integer();
  int64_t y = b.integer();
  if (x == std::numeric_limits<int64_t>::min() && y == -1) return Fail(ArithmeticError::kOverflow);
  if (x % y == 0) return {Quantity::Integer(x / y, dim)};
  return RealResult(InexactQuotient(x, y), dim);
}

auto Negate(const Quantity& a) -> ArithmeticResult {
  if (!a.is_integer()) return RealResult(-a.real(), a.dimension());
  if (a.integer() == std::numeric_limits<int64_t>::min()) return Fail(ArithmeticError::kOverflow);
  return {Quantity::Integer(-a.integer(), a.dimension())};
}

}  // namespace avf::units
