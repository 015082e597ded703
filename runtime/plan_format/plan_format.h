// The plan.json contract, written once: the format name and version, the
// closed enumerations and their spellings (enums.def), and every key with its
// type and range (keys.def). The compiler's writer, the runtime's reader,
// `avf-run check-plan` and the generated JSON Schema all use these tables.
// Plain C++17 with no dependency: both the compiler and the runtime link it,
// and it links neither.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace avf::plan_format {

inline constexpr std::string_view kFormatName = "aviflow-plan";
// Bumped only by a change a reader of the previous version could misread
// (docs/plan-format.md, Versioning); a new key keeps it.
inline constexpr int64_t kFormatVersion = 3;
// The oldest version the reader still reads: version 2 lists the tables that
// version 3 derives (keys.def, PLAN_KEY_VERSIONS).
inline constexpr int64_t kOldestFormatVersion = 2;
// The order the rank coordinates follow, fastest axis first (rank_layout.h).
inline constexpr std::string_view kRankOrder = "tensor,data,pipeline";

#define PLAN_ENUM_BEGIN(Type) enum class Type {
#define PLAN_ENUM_VALUE(Type, Enumerator, Spelling) Enumerator,
#define PLAN_ENUM_END(Type) \
  }                         \
  ;
#include "plan_format/enums.def"

// The spellings of each enumeration, value i at index i.
template <typename E>
struct EnumTraits;
#define PLAN_ENUM_BEGIN(Type)                        \
  template <>                                        \
  struct EnumTraits<Type> {                          \
    static constexpr std::string_view kType = #Type; \
    static constexpr std::string_view kNames[] = {
#define PLAN_ENUM_VALUE(Type, Enumerator, Spelling) Spelling,
#define PLAN_ENUM_END(Type) \
  }                         \
  ;                         \
  }                         \
  ;
#include "plan_format/enums.def"

template <typename E>
constexpr auto EnumCount() -> size_t {
  return std::size(EnumTraits<E>::kNames);
}

// The plan.json spelling of a value; "?" for a value outside the enum (a cast
// from garbage), never a read past the table.
template <typename E>
constexpr auto Spelling(E v) -> std::string_view {
  auto i = static_cast<size_t>(v);
  return i < EnumCount<E>() ? EnumTraits<E>::kNames[i] : "?";
}

template <typename E>
constexpr auto ParseEnum(std::string_view text) -> std::optional<E> {
  for (size_t i = 0; i < EnumCount<E>(); ++i) {
    if (EnumTraits<E>::kNames[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

// The spellings of a key's enumeration; empty for a key without one.
struct Choices {
  const std::string_view* names = nullptr;
  size_t count = 0;
};
struct NoEnum;
template <typename E>
constexpr auto ChoicesOf() -> Choices {
  return {EnumTraits<E>::kNames, EnumCount<E>()};
}
template <>
constexpr auto ChoicesOf<NoEnum>() -> Choices {
  return {};
}

// "`a`, `b` or `c`", for "expected one of" messages.
auto ChoicesText(Choices choices) -> std::string;
template <typename E>
auto EnumChoices() -> std::string {
  return ChoicesText(ChoicesOf<E>());
}

// The JSON shape and range of a value (keys.def's ValueType column).
enum class ValueType : uint8_t {
  FormatName,            // the string kFormatName
  FormatVersion,         // the integer kFormatVersion
  RankOrder,             // the string kRankOrder
  Name,                  // a string of at least one character
  Text,                  // any string
  TextOrNull,            // a non-empty string or null
  Sha256OrNull,          // 64 lowercase hexadecimal digits or null
  Count,                 // an integer >= 0
  Positive,              // an integer >= 1
  PositiveOrNull,        // an integer >= 1 or null
  ZeroStage,             // an integer 0..3
  TokenBytes,            // 2 or 4
  PositiveNumber,        // a number > 0
  PositiveNumberOrNull,  // a number > 0 or null
  NonNegative,           // a number >= 0
  NonNegativeOrNull,     // a number >= 0 or null
  AtLeastOne,            // a number >= 1
  Fraction,              // a number 0..1
  Bool,
  Enum,  // one spelling of the key's enumeration
  EnumOrNull,
  Object,  // the keys whose parent is this key
  ObjectOrNull,
  SharedObject,       // a shape referred to by other keys (Location)
  Objects,            // an array of at least one object of this key's children
  ObjectsOrEmpty,     // the same, possibly empty
  Positives,          // an array of at least one integer >= 1
  GroupList,          // an array of groups, each an array of distinct rank numbers
  OptionalGroupList,  // the same, present only when such groups exist
  Location,           // the Location object
  LocationOrNull,
  BetasOrNull,  // [beta1, beta2], each 0..1, or null
};

enum class Json : uint8_t { String, Integer, Number, Boolean, Object, Array };

// What a ValueType is in JSON. For strings `min` is the shortest length.
struct TypeInfo {
  Json json;
  bool nullable = false;
  double min = 0;
  bool exclusive_min = false;
  double max = 1e308;
};
auto Describe(ValueType type) -> TypeInfo;

enum class Key : uint16_t {
  Root,    // the top-level object
  Shared,  // the holder of shapes used in several places
#define PLAN_KEY(Id, Parent, Spelling, Type, Enum) Id,
#include "plan_format/keys.def"
};

struct KeyInfo {
  Key id;
  Key parent;
  std::string_view spelling;
  ValueType type;
  Choices choices;
};

inline constexpr KeyInfo kKeys[] = {
    {Key::Root, Key::Root, "", ValueType::Object, {}},
    {Key::Shared, Key::Root, "", ValueType::Object, {}},
#define PLAN_KEY(Id, Parent, Spelling, Type, Enum) {Key::Id, Key::Parent, Spelling, ValueType::Type, ChoicesOf<Enum>()},
#include "plan_format/keys.def"
};

constexpr auto Info(Key key) -> const KeyInfo& { return kKeys[static_cast<size_t>(key)]; }
constexpr auto Spell(Key key) -> std::string_view { return Info(key).spelling; }

// Whether a present key's value may be null.
auto Nullable(Key key) -> bool;
// Every key of plan.json is always present except these (groups.embedding).
auto Optional(Key key) -> bool;
// Whether a plan of format `version` has the key (keys.def, PLAN_KEY_VERSIONS).
auto InVersion(Key key, int64_t version) -> bool;
// "hardware.gpus_per_node", "ranks[].tensor": where the key sits, for docs and messages.
auto KeyPath(Key key) -> std::string;

// Seconds between two checkpoints as the plan predicts them: `every` as a
// duration, else `every` steps at the predicted step time; 0 when only the
// last step's is written. The alert's threshold (the compiler) and the
// exported avf_checkpoint_interval_seconds_predicted (avf-run) both use it.
auto PredictedCheckpointInterval(std::optional<double> every_seconds, std::optional<int64_t> every_steps,
                                 double step_seconds) -> double;

// "1, 2 or 4": the node counts of an elastic plan, for messages on both sides.
auto CountsText(const std::vector<int64_t>& counts) -> std::string;

}  // namespace avf::plan_format
