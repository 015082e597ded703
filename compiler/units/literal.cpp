// ParseLiteral: NUMBER tokens to quantities (docs/language.md, Quantities and units).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>

#include <llvm/ADT/StringRef.h>

#include "units/quantity.h"
#include "units/unit_table.h"

namespace avf::units {

namespace {

using detail::Decimal;
using detail::Int128;
using detail::UnitDef;

// Exponents beyond this already give inf or 0 for any mantissa a source file
// can hold, so clamping keeps the arithmetic in int64_t without changing
// results.
constexpr int64_t kExponentLimit = 1'000'000'000;

auto IsDigit(char c) -> bool { return c >= '0' && c <= '9'; }
auto DigitAt(std::string_view text, size_t pos) -> bool { return pos < text.size() && IsDigit(text[pos]); }

// The number part of a token: `1_000.5e3` of `1_000.5e3GB`.
struct NumberParts {
  Decimal mantissa;              // normalized, exponent applied
  bool integer_written = false;  // no '.' and no exponent
  bool has_digits = false;
  size_t end = 0;  // where the unit suffix starts
};

// DIGITS: digits with single `_` separators between two digits. Appends the
// digits to *out and returns the position after them.
auto ScanDigits(std::string_view text, size_t pos, std::string* out) -> size_t {
  while (DigitAt(text, pos)) {
    out->push_back(text[pos++]);
    if (pos + 1 < text.size() && text[pos] == '_' && IsDigit(text[pos + 1])) ++pos;
  }
  return pos;
}

// `[eE][+-]?DIGITS` at pos, if complete; otherwise the `e` starts a suffix
// (`2e` has the unit "e"). Returns the position after the exponent.
auto ScanExponent(std::string_view text, size_t pos, int64_t* exponent) -> size_t {
  if (pos >= text.size() || (text[pos] != 'e' && text[pos] != 'E')) return pos;
  size_t digits_at = pos + 1;
  bool negative = false;
  if (digits_at < text.size() && (text[digits_at] == '+' || text[digits_at] == '-')) {
    negative = text[digits_at] == '-';
    ++digits_at;
  }
  std::string digits;
  size_t end = ScanDigits(text, digits_at, &digits);
  if (digits.empty()) return pos;
  int64_t value = 0;
  for (char c : digits) value = std::min(kExponentLimit, value * 10 + (c - '0'));
  *exponent = negative ? -value : value;
  return end;
}

auto ScanNumber(std::string_view text) -> NumberParts {
  NumberParts parts;
  std::string digits;
  size_t pos = ScanDigits(text, 0, &digits);
  parts.end = pos;
  if (digits.empty()) return parts;
  parts.has_digits = true;
  int64_t fraction_digits = 0;
  bool has_point = text.size() > pos && text[pos] == '.' && DigitAt(text, pos + 1);
  if (has_point) {
    size_t before = digits.size();
    pos = ScanDigits(text, pos + 1, &digits);
    fraction_digits = static_cast<int64_t>(digits.size() - before);
  }
  int64_t exponent = 0;
  size_t end = ScanExponent(text, pos, &exponent);
  parts.integer_written = !has_point && end == pos;
  parts.end = end;
  parts.mantissa = Decimal{std::move(digits), exponent - fraction_digits};
  detail::Normalize(&parts.mantissa);
  return parts;
}

// Divides *n by p up to `count` times while it divides; returns how many.
auto RemoveFactor(Int128* n, int p, int64_t count) -> int64_t {
  int64_t removed = 0;
  while (removed < count && *n != 0 && *n % p == 0) {
    *n /= p;
    ++removed;
  }
  return removed;
}

// Divides (*a × *b) by p^count using factors of either; false if it does
// not divide.
auto DivideProductByPower(Int128* a, Int128* b, int p, int64_t count) -> bool {
  int64_t removed = RemoveFactor(a, p, count);
  removed += RemoveFactor(b, p, count - removed);
  return removed == count;
}

auto MultiplyByPower(Int128* n, int p, int64_t count) -> bool {
  for (int64_t i = 0; i < count; ++i) {
    if (__builtin_mul_overflow(*n, Int128{p}, n)) return false;
  }
  return true;
}

// mantissa × num / den exactly, when that is an integer within 128 bits.
// den = 2^a·5^b·r, so with mantissa = m·10^e the value is
// m·num·2^(e-a)·5^(e-b) / r; negative powers must divide m·num.
auto ExactIntegral(const Decimal& mantissa, int64_t num, int64_t den) -> std::optional<Int128> {
  if (mantissa.digits.empty()) return Int128{0};
  std::optional<Int128> m = detail::ParseInt128(mantissa.digits);
  if (!m) return std::nullopt;
  Int128 a = *m;
  Int128 b = num;
  Int128 r = den;
  int64_t twos = mantissa.exp10 - RemoveFactor(&r, 2, 64);
  int64_t fives = mantissa.exp10 - RemoveFactor(&r, 5, 64);
  for (Int128* n : {&a, &b}) {
    Int128 g = detail::GcdInt128(*n, r);
    *n /= g;
    r /= g;
  }
  if (r != 1) return std::nullopt;
  if (twos < 0 && !DivideProductByPower(&a, &b, 2, -twos)) return std::nullopt;
  if (fives < 0 && !DivideProductByPower(&a, &b, 5, -fives)) return std::nullopt;
  Int128 v = 0;
  if (__builtin_mul_overflow(a, b, &v)) return std::nullopt;
  if (!MultiplyByPower(&v, 2, std::max<int64_t>(twos, 0))) return std::nullopt;
  if (!MultiplyByPower(&v, 5, std::max<int64_t>(fives, 0))) return std::nullopt;
  return v;
}

// digits × 10^exp10 rounded once to the nearest double.
auto DecimalToDouble(const std::string& digits, int64_t exp10) -> double {
  if (digits.empty()) return 0.0;
  std::string text = digits + "e" + std::to_string(exp10);
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) {
    bool too_big = static_cast<int64_t>(digits.size()) + exp10 > 0;
    return too_big ? std::numeric_limits<double>::infinity() : 0.0;
  }
  return v;
}

// The nearest double to mantissa × num / den. Powers of ten in the factor
// move into the exponent and the rest joins the digits when it fits, so
// common units round only once (÷8 for bits is exact in binary).
auto ApproximateValue(const Decimal& mantissa, int64_t num, int64_t den) -> double {
  int64_t exp10 = mantissa.exp10;
  for (; num % 10 == 0; num /= 10) ++exp10;
  for (; den % 10 == 0; den /= 10) --exp10;
  std::string digits = mantissa.digits;
  std::optional<Int128> m = detail::ParseInt128(digits);
  Int128 product = 0;
  if (m && !__builtin_mul_overflow(*m, Int128{num}, &product)) {
    digits = detail::Int128ToString(product);
    num = 1;
  }
  double v = DecimalToDouble(digits, exp10);
  return v * static_cast<double>(num) / static_cast<double>(den);
}

auto Lower(std::string_view s) -> std::string {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Ranks known suffixes against `unit`: case-insensitive edit distance
// first (`gib` is `GiB`), then case-sensitive distance, then units.def order.
// Returns the best suffix and its case-insensitive distance.
auto ClosestUnit(std::string_view unit) -> std::pair<std::string_view, unsigned> {
  std::string lower = Lower(unit);
  std::tuple<unsigned, unsigned, size_t> best{~0u, ~0u, 0};
  std::string_view best_suffix;
  auto table = detail::UnitTable();
  for (size_t i = 0; i < table.size(); ++i) {
    std::string_view suffix = table[i].suffix;
    unsigned folded = llvm::StringRef(lower).edit_distance(Lower(suffix), true);
    unsigned exact = llvm::StringRef(unit.data(), unit.size()).edit_distance(suffix, true);
    std::tuple<unsigned, unsigned, size_t> score{folded, exact, i};
    if (score < best) {
      best = score;
      best_suffix = suffix;
    }
  }
  return {best_suffix, std::get<0>(best)};
}

// `Gbps`, `MBps` and `TFLOPS` are common spellings of per-second units; edit
// distance alone would offer `TFLOP` (a FLOP count) for the last one.
auto PerSecondSpelling(std::string_view unit) -> std::string {
  std::string lower = Lower(unit);
  if (lower.ends_with("flops")) return std::string(unit.substr(0, unit.size() - 1)) + "/s";
  if (lower.size() > 2 && lower.ends_with("ps")) return std::string(unit.substr(0, unit.size() - 2)) + "/s";
  return "";
}

// The closest known suffix, or "" when none is close: at most a third of the
// characters differ (at least one may), and never all of them (`2e`).
// No known suffix is near a long one, and edit distance grows with the
// product of the lengths: a 1 MB suffix gets no suggestion.
constexpr size_t kMaxSuggestedLength = 24;

auto SuggestUnit(std::string_view unit) -> std::string {
  if (unit.empty() || unit.size() > kMaxSuggestedLength) return "";
  if (std::string per_second = PerSecondSpelling(unit); !per_second.empty()) {
    auto [suffix, distance] = ClosestUnit(per_second);
    if (distance == 0) return std::string(suffix);
  }
  auto [suffix, distance] = ClosestUnit(unit);
  unsigned limit = std::max<unsigned>(1, static_cast<unsigned>(unit.size() / 3));
  if (distance > limit || (distance > 0 && distance >= unit.size())) return "";
  return std::string(suffix);
}

auto FitsInt64(Int128 v) -> bool {
  return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
}

// The common literal, up to 18 plain digits and a unit of whole base units
// (`32`, `80GiB`): the general case's exact arithmetic gives the same.
auto ParsePlainInteger(std::string_view text) -> std::optional<LiteralResult> {
  constexpr size_t kMaxDigits = 18;
  size_t end = 0;
  int64_t value = 0;
  for (; end < text.size() && end < kMaxDigits && IsDigit(text[end]); ++end) value = value * 10 + (text[end] - '0');
  if (end == 0 || end == kMaxDigits) return std::nullopt;
  if (end < text.size() && (text[end] == '_' || text[end] == '.' || text[end] == 'e' || text[end] == 'E'))
    return std::nullopt;
  const UnitDef* unit = detail::FindUnit(text.substr(end));
  int64_t product = 0;
  if (!unit || unit->den != 1 || __builtin_mul_overflow(value, unit->num, &product)) return std::nullopt;
  LiteralResult result;
  result.unit_offset = end;
  result.unit = std::string(text.substr(end));
  result.value = Quantity::Integer(product, unit->dimension);
  return result;
}

}  // namespace

auto ParseLiteral(std::string_view text) -> LiteralResult {
  if (std::optional<LiteralResult> plain = ParsePlainInteger(text)) return std::move(*plain);
  LiteralResult result;
  NumberParts parts = ScanNumber(text);
  result.unit_offset = parts.end;
  result.unit = std::string(text.substr(parts.end));
  const UnitDef* unit = parts.has_digits ? detail::FindUnit(result.unit) : nullptr;
  if (unit == nullptr) {
    result.error = LiteralError::kUnknownUnit;
    // Without digits this is no number at all; a suggestion would only echo.
    if (parts.has_digits) result.suggestion = SuggestUnit(result.unit);
    return result;
  }
  std::optional<Int128> exact = ExactIntegral(parts.mantissa, unit->num, unit->den);
  if (exact && FitsInt64(*exact)) {
    result.value = Quantity::Integer(static_cast<int64_t>(*exact), unit->dimension);
    return result;
  }
  double approximate = ApproximateValue(parts.mantissa, unit->num, unit->den);
  result.value = Quantity::Real(approximate, unit->dimension);
  if (parts.integer_written && unit->num % unit->den == 0) {
    result.error = LiteralError::kTooLarge;
  } else if (!std::isfinite(approximate)) {
    result.error = LiteralError::kNotFinite;
  }
  return result;
}

auto OtherBytePrefix(std::string_view text) -> std::optional<PrefixTwin> {
  static constexpr std::string_view kDecimal[] = {"KB", "MB", "GB", "TB", "PB"};
  static constexpr std::string_view kBinary[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  LiteralResult written = ParseLiteral(text);
  if (written.error != LiteralError::kNone) return std::nullopt;
  for (size_t i = 0; i < std::size(kDecimal); ++i) {
    bool decimal = written.unit == kDecimal[i];
    if (!decimal && written.unit != kBinary[i]) continue;
    PrefixTwin twin;
    twin.text = std::string(text.substr(0, written.unit_offset)) + std::string(decimal ? kBinary[i] : kDecimal[i]);
    twin.value = ParseLiteral(twin.text).value;
    twin.binary = decimal;
    return twin;
  }
  return std::nullopt;
}

}  // namespace avf::units
