// Internal to avf_units: the unit table built from units.def, and the exact
// decimal representation that literal reading and display share. Other
// phases use quantity.h only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "units/quantity.h"

namespace avf::units::detail {

// The compiler (g++ and clang) provides 128-bit integers; exact literal and
// display arithmetic needs them because a mantissa times a unit factor can
// exceed 64 bits even when the quotient fits.
using Int128 = __int128;

// One row of units.def: value_in_base_units = literal × num / den.
struct UnitDef {
  std::string_view suffix;
  Dimension dimension;
  int64_t num;
  int64_t den;
  std::string_view description;
};

// All rows of units.def, in file order (the empty suffix is not among them).
auto UnitTable() -> std::span<const UnitDef>;
// The row for `suffix`, case-sensitively; "" finds a plain count (factor 1).
auto FindUnit(std::string_view suffix) -> const UnitDef*;

// digits × 10^exp10. After Normalize, digits has no leading or trailing
// zeros, and zero is the empty string with exp10 0.
struct Decimal {
  std::string digits;
  int64_t exp10 = 0;
};
void Normalize(Decimal* d);

// Plain notation where the decimal point sits within 21 places of the first
// digit (like JavaScript's Number#toString), scientific ("1.5e-7") otherwise.
auto FormatDecimal(const Decimal& d) -> std::string;
// Always scientific: "4.2e12", "1e-7".
auto FormatScientific(const Decimal& d) -> std::string;
// The shortest digits that read back as `v` (v finite and non-negative).
auto ShortestDecimal(double v) -> Decimal;

// Decimal text of a non-negative 128-bit integer.
auto Int128ToString(Int128 v) -> std::string;
// The integer spelled by at most 38 decimal digits ("" is 0), or nullopt.
auto ParseInt128(std::string_view digits) -> std::optional<Int128>;
auto GcdInt128(Int128 a, Int128 b) -> Int128;

}  // namespace avf::units::detail
