// plan.json spellings of the closed enumerations, shared by the reader
// (text -> value) and Name() (value -> text), so the two cannot disagree.
#pragma once

#include <optional>
#include <string>

#include "plan/plan.h"

namespace avf::runtime {

// How many values each enumeration has; Name(E(i)) spells value i.
template <typename E>
struct EnumCount;
template <> struct EnumCount<Target> { static constexpr int value = 3; };
template <> struct EnumCount<Arch> { static constexpr int value = 2; };
template <> struct EnumCount<Precision> { static constexpr int value = 3; };
template <> struct EnumCount<LengthField> { static constexpr int value = 3; };
template <> struct EnumCount<PipelineSchedule> { static constexpr int value = 3; };
template <> struct EnumCount<Recompute> { static constexpr int value = 3; };
template <> struct EnumCount<TokenFormat> { static constexpr int value = 2; };
template <> struct EnumCount<StorageKind> { static constexpr int value = 8; };
template <> struct EnumCount<OptimizerKind> { static constexpr int value = 2; };
template <> struct EnumCount<LrSchedule> { static constexpr int value = 3; };

template <typename E>
auto ParseEnum(llvm::StringRef text) -> std::optional<E> {
  for (int i = 0; i < EnumCount<E>::value; ++i) {
    if (Name(static_cast<E>(i)) == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

// "`a`, `b` or `c`", for "expected one of" messages.
template <typename E>
auto EnumChoices() -> std::string {
  std::string out;
  for (int i = 0; i < EnumCount<E>::value; ++i) {
    if (i > 0) out += i + 1 == EnumCount<E>::value ? " or " : ", ";
    out += "`" + Name(static_cast<E>(i)).str() + "`";
  }
  return out;
}

}  // namespace avf::runtime
