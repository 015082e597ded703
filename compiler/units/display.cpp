// Quantity::DisplayText: a value with the most readable unit of its
// dimension, chosen deterministically and readable back by ParseLiteral.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "units/quantity.h"
#include "units/unit_table.h"

namespace avf::units {

namespace {

using detail::Decimal;
using detail::Int128;
using detail::UnitDef;

// Units that scale the same base, smallest first. The largest unit that
// shows a value of at least 1 is the family's choice; with `whole_only` that
// value must also have no fraction (`30min`, never `0.5h`).
struct Family {
  std::vector<std::string_view> units;
  bool whole_only = false;
};

// How a dimension is displayed. With `shortest`, every family proposes a text
// and the shortest wins, earlier families on ties; otherwise the first family
// with a proposal wins.
struct DisplayRule {
  Dimension dim;
  std::string_view base;  // the suffix of factor 1, used for zero
  bool shortest = true;
  std::vector<Family> families;
};

auto Rules() -> const std::vector<DisplayRule>& {
  static const std::vector<DisplayRule> rules = {
      {kCount, "", true, {{{""}}, {{"k", "M", "G", "T", "P"}}}},
      {kBytes, "B", true, {{{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}}, {{"B", "KB", "MB", "GB", "TB", "PB"}}}},
      {kBandwidth,
       "B/s",
       true,
       {{{"B/s", "KB/s", "MB/s", "GB/s", "TB/s", "PB/s"}},
        {{"B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s", "PiB/s"}},
        {{"b/s", "Kb/s", "Mb/s", "Gb/s", "Tb/s", "Pb/s"}}}},
      {kTime, "s", false, {{{"s", "min", "h", "d"}, true}, {{"ns", "us", "ms", "s"}}}},
      {kComputeRate, "FLOP/s", true, {{{"FLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s"}}}},
      {kFlops, "FLOP", true, {{{"FLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"}}}},
      {kPower, "W", true, {{{"W", "kW"}}}},
  };
  return rules;
}

// The absolute value being displayed; 2^63 is representable for INT64_MIN.
struct Magnitude {
  bool is_integer;
  Int128 integer;
  double real;
};

// A value shown in one unit, as text with its suffix.
struct Candidate {
  std::string text;
  bool whole;
  bool at_least_one;
};

// v × den / num exactly, when that has a terminating decimal expansion
// (its reduced denominator has no prime factors but 2 and 5).
auto ExactScaled(Int128 v, int64_t num, int64_t den) -> std::optional<Decimal> {
  Int128 p = v * den;  // v ≤ 2^63 and den ≤ 10^9: fits
  Int128 q = num;
  Int128 g = detail::GcdInt128(p, q);
  p /= g;
  q /= g;
  Int128 rest = q;
  int64_t places = 0;
  for (int prime : {2, 5}) {
    int64_t count = 0;
    for (; rest % prime == 0; rest /= prime) ++count;
    places = std::max(places, count);
  }
  if (rest != 1) return std::nullopt;
  Decimal d{detail::Int128ToString(p / q), 0};
  // Long division: the remainder stays below q, so ×10 cannot overflow.
  for (Int128 r = p % q; r != 0; r %= q) {
    r *= 10;
    d.digits.push_back(static_cast<char>('0' + static_cast<int>(r / q)));
    --d.exp10;
  }
  detail::Normalize(&d);
  return d;
}

// v × den / num for a real v. A power-of-ten factor only moves the decimal
// point, so the shortest digits of v stay exact; other factors divide.
auto RealScaled(double v, int64_t num, int64_t den) -> Decimal {
  int64_t shift = 0;
  for (; num % 10 == 0; num /= 10) ++shift;
  for (; den % 10 == 0; den /= 10) --shift;
  double scaled = num == 1 && den == 1 ? v : v * static_cast<double>(den) / static_cast<double>(num);
  Decimal d = detail::ShortestDecimal(scaled);
  if (!d.digits.empty()) d.exp10 -= shift;
  return d;
}

auto ReadsBackAs(const std::string& text, Dimension dim, double v) -> bool {
  LiteralResult r = ParseLiteral(text);
  return r.error == LiteralError::kNone && r.value.dimension() == dim && r.value.real() == v;
}

auto MakeCandidate(const Magnitude& m, const UnitDef& unit) -> std::optional<Candidate> {
  std::optional<Decimal> d;
  std::string text;
  if (m.is_integer) {
    d = ExactScaled(m.integer, unit.num, unit.den);
    // ParseLiteral reads up to 38 significant digits exactly.
    if (!d || d->digits.size() > 38) return std::nullopt;
    text = detail::FormatDecimal(*d) + std::string(unit.suffix);
  } else {
    d = RealScaled(m.real, unit.num, unit.den);
    text = detail::FormatDecimal(*d) + std::string(unit.suffix);
    // Plain text of a huge real reads back as a too-large integer literal.
    if (!ReadsBackAs(text, unit.dimension, m.real)) {
      text = detail::FormatScientific(*d) + std::string(unit.suffix);
      if (!ReadsBackAs(text, unit.dimension, m.real)) return std::nullopt;
    }
  }
  int64_t point = d->exp10 + static_cast<int64_t>(d->digits.size());
  return Candidate{std::move(text), d->exp10 >= 0, !d->digits.empty() && point >= 1};
}

auto PickFromFamily(const Magnitude& m, const Family& family) -> std::optional<std::string> {
  for (auto it = family.units.rbegin(); it != family.units.rend(); ++it) {
    std::optional<Candidate> c = MakeCandidate(m, *detail::FindUnit(*it));
    if (c && c->at_least_one && (c->whole || !family.whole_only)) return c->text;
  }
  if (family.whole_only) return std::nullopt;
  std::optional<Candidate> smallest = MakeCandidate(m, *detail::FindUnit(family.units.front()));
  if (!smallest) return std::nullopt;
  return smallest->text;
}

auto PickText(const Magnitude& m, const DisplayRule& rule) -> std::optional<std::string> {
  std::optional<std::string> best;
  for (const Family& family : rule.families) {
    std::optional<std::string> text = PickFromFamily(m, family);
    if (!text) continue;
    if (!rule.shortest) return text;
    if (!best || text->size() < best->size()) best = std::move(text);
  }
  return best;
}

auto FindRule(Dimension dim) -> const DisplayRule* {
  for (const DisplayRule& rule : Rules()) {
    if (rule.dim == dim) return &rule;
  }
  return nullptr;
}

}  // namespace

auto Quantity::DisplayText() const -> std::string {
  const DisplayRule* rule = FindRule(dim_);
  if (rule == nullptr) return ValueText() + " " + DimensionName(dim_);
  std::string suffix(rule->base);
  if (!is_integer_ && !std::isfinite(real_)) return ValueText() + (suffix.empty() ? "" : " " + suffix);
  bool negative = is_integer_ ? int_ < 0 : std::signbit(real_) && real_ != 0.0;
  Magnitude m{is_integer_, is_integer_ ? Int128{int_} : 0, is_integer_ ? 0.0 : std::fabs(real_)};
  if (negative && is_integer_) m.integer = -m.integer;
  if ((is_integer_ && int_ == 0) || (!is_integer_ && real_ == 0.0)) return "0" + suffix;
  // Counts below a million read best as written (`warmup = 2000`,
  // `lr = 0.0003`); prefixes help only for large ones (`4.2T`).
  double magnitude = m.is_integer ? static_cast<double>(m.integer) : m.real;
  DisplayRule plain{rule->dim, rule->base, false, {rule->families.front()}};
  bool use_plain = dim_ == kCount && magnitude < 1e6;
  std::optional<std::string> text = PickText(m, use_plain ? plain : *rule);
  if (!text) {
    // Not reached for finite values (the base unit always reads back); kept
    // so that display never fails.
    text =
        (is_integer_ ? detail::Int128ToString(m.integer) : detail::FormatScientific(detail::ShortestDecimal(m.real))) +
        suffix;
  }
  return (negative ? "-" : "") + *text;
}

}  // namespace avf::units
