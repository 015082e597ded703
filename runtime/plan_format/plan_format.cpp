#include "plan_format/plan_format.h"

namespace avf::plan_format {

auto ChoicesText(Choices choices) -> std::string {
  std::string out;
  for (size_t i = 0; i < choices.count; ++i) {
    if (i > 0) out += i + 1 == choices.count ? " or " : ", ";
    out += "`" + std::string(choices.names[i]) + "`";
  }
  return out;
}

auto Describe(ValueType type) -> TypeInfo {
  using V = ValueType;
  switch (type) {
    case V::FormatName:
    case V::RankOrder: return {Json::String, false, 1};
    case V::FormatVersion: return {Json::Integer, false, 1};
    case V::Name: return {Json::String, false, 1};
    case V::Text: return {Json::String, false, 0};
    case V::TextOrNull: return {Json::String, true, 1};
    case V::Sha256OrNull: return {Json::String, true, 64};
    case V::Count: return {Json::Integer, false, 0};
    case V::Positive: return {Json::Integer, false, 1};
    case V::PositiveOrNull: return {Json::Integer, true, 1};
    case V::ZeroStage: return {Json::Integer, false, 0, false, 3};
    case V::TokenBytes: return {Json::Integer, false, 2, false, 4};
    case V::PositiveNumber: return {Json::Number, false, 0, true};
    case V::PositiveNumberOrNull: return {Json::Number, true, 0, true};
    case V::NonNegative: return {Json::Number, false, 0};
    case V::NonNegativeOrNull: return {Json::Number, true, 0};
    case V::AtLeastOne: return {Json::Number, false, 1};
    case V::Fraction: return {Json::Number, false, 0, false, 1};
    case V::Bool: return {Json::Boolean};
    case V::Enum: return {Json::String};
    case V::EnumOrNull: return {Json::String, true};
    case V::Object:
    case V::SharedObject:
    case V::Location: return {Json::Object};
    case V::ObjectOrNull:
    case V::LocationOrNull: return {Json::Object, true};
    case V::Objects:
    case V::Positives:
    case V::GroupList:
    case V::OptionalGroupList: return {Json::Array, false, 1};
    case V::ObjectsOrEmpty: return {Json::Array, false, 0};
    case V::BetasOrNull: return {Json::Array, true, 2, false, 2};
  }
  return {Json::Object};
}

auto Nullable(Key key) -> bool { return Describe(Info(key).type).nullable; }

auto Optional(Key key) -> bool { return Info(key).type == ValueType::OptionalGroupList; }

auto InVersion(Key key, int64_t version) -> bool {
  for (Key k = key; k != Key::Root && k != Key::Shared; k = Info(k).parent) {
    int64_t first = kOldestFormatVersion, last = kFormatVersion;
    switch (k) {
#define PLAN_KEY_VERSIONS(Id, First, Last)        \
  case Key::Id:                                   \
    first = First;                                \
    last = (Last) == 0 ? kFormatVersion : (Last); \
    break;
#include "plan_format/keys.def"
      default: break;
    }
    if (version < first || version > last) return false;
  }
  return true;
}

auto KeyPath(Key key) -> std::string {
  const KeyInfo& k = Info(key);
  if (k.parent == Key::Root || k.parent == Key::Shared) return std::string(k.spelling);
  const KeyInfo& parent = Info(k.parent);
  bool array = parent.type == ValueType::Objects || parent.type == ValueType::ObjectsOrEmpty;
  return KeyPath(k.parent) + (array ? "[]." : ".") + std::string(k.spelling);
}

auto PredictedCheckpointInterval(std::optional<double> every_seconds, std::optional<int64_t> every_steps,
                                 double step_seconds) -> double {
  if (every_seconds) return *every_seconds;
  if (every_steps) return static_cast<double>(*every_steps) * step_seconds;
  return 0;
}

auto CountsText(const std::vector<int64_t>& counts) -> std::string {
  std::string out;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i > 0) out += i + 1 == counts.size() ? " or " : ", ";
    out += std::to_string(counts[i]);
  }
  return out;
}

}  // namespace avf::plan_format
