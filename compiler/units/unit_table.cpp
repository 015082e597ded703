#include "units/unit_table.h"

#include <charconv>
#include <system_error>
#include <unordered_map>

namespace avf::units {
namespace detail {

namespace {
constexpr UnitDef kUnits[] = {
#define UNIT(Suffix, Dimension, Num, Den, Description) {Suffix, Dimension, Num, Den, Description},
#include "units/units.def"
#undef UNIT
};
constexpr UnitDef kPlainCount{"", kCount, 1, 1, "count"};

// Exact literal arithmetic divides by Den and display divides by Num, so a
// zero or negative factor in units.def must fail the build, not a user.
constexpr auto TableIsValid() -> bool {
  for (const UnitDef& u : kUnits) {
    if (u.num <= 0 || u.den <= 0 || u.suffix.empty()) return false;
  }
  return true;
}
static_assert(TableIsValid(), "units.def: factors must be positive and suffixes non-empty");

auto Zeros(int64_t n) -> std::string { return std::string(static_cast<size_t>(n), '0'); }
}  // namespace

auto UnitTable() -> std::span<const UnitDef> { return kUnits; }

auto FindUnit(std::string_view suffix) -> const UnitDef* {
  if (suffix.empty()) return &kPlainCount;
  // Every number literal looks its suffix up: hashed rather than scanned.
  static const std::unordered_map<std::string_view, const UnitDef*> kBySuffix = [] {
    std::unordered_map<std::string_view, const UnitDef*> by_suffix;
    for (const UnitDef& u : kUnits) by_suffix.emplace(u.suffix, &u);
    return by_suffix;
  }();
  auto it = kBySuffix.find(suffix);
  return it == kBySuffix.end() ? nullptr : it->second;
}

void Normalize(Decimal* d) {
  size_t first = d->digits.find_first_not_of('0');
  if (first == std::string::npos) {
    *d = Decimal{};
    return;
  }
  size_t last = d->digits.find_last_not_of('0');
  d->exp10 += static_cast<int64_t>(d->digits.size() - 1 - last);
  d->digits = d->digits.substr(first, last - first + 1);
}

auto FormatScientific(const Decimal& d) -> std::string {
  if (d.digits.empty()) return "0";
  int64_t k = static_cast<int64_t>(d.digits.size());
  std::string out(1, d.digits[0]);
  if (k > 1) out += "." + d.digits.substr(1);
  return out + "e" + std::to_string(d.exp10 + k - 1);
}

auto FormatDecimal(const Decimal& d) -> std::string {
  if (d.digits.empty()) return "0";
  int64_t k = static_cast<int64_t>(d.digits.size());
  int64_t n = d.exp10 + k;  // the value is 0.digits × 10^n
  if (n > 21 || n <= -6) return FormatScientific(d);
  if (n >= k) return d.digits + Zeros(n - k);
  if (n > 0) {
    auto point = static_cast<size_t>(n);
    return d.digits.substr(0, point) + "." + d.digits.substr(point);
  }
  return "0." + Zeros(-n) + d.digits;
}

auto ShortestDecimal(double v) -> Decimal {
  // to_chars without a precision gives the shortest round-trip digits.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view text(buf, ec == std::errc{} ? static_cast<size_t>(end - buf) : 0);
  size_t e = text.find('e');
  if (e == std::string_view::npos) return Decimal{};
  Decimal d;
  for (char c : text.substr(0, e)) {
    if (c != '.') d.digits.push_back(c);
  }
  int exponent = 0;
  std::string_view exp_text = text.substr(e + 1);
  if (!exp_text.empty() && exp_text[0] == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);
  d.exp10 = exponent - static_cast<int64_t>(d.digits.size() - 1);
  Normalize(&d);
  return d;
}

auto Int128ToString(Int128 v) -> std::string {
  if (v == 0) return "0";
  std::string out;
  for (; v > 0; v /= 10) out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  return out;
}

auto ParseInt128(std::string_view digits) -> std::optional<Int128> {
  // 38 digits always fit: 10^38 - 1 < 2^127 - 1 ≈ 1.7e38.
  if (digits.size() > 38) return std::nullopt;
  Int128 v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

auto GcdInt128(Int128 a, Int128 b) -> Int128 {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    Int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

}  // namespace detail

auto AllUnits() -> const std::vector<UnitInfo>& {
  static const std::vector<UnitInfo> units = [] {
    std::vector<UnitInfo> out;
    for (const detail::UnitDef& u : detail::kUnits) out.push_back({u.suffix, u.dimension, u.description});
    return out;
  }();
  return units;
}

}  // namespace avf::units
