#include "plan_format/schema.h"

#include <cmath>
#include <string>
#include <vector>

#include "plan_format/plan_format.h"

namespace avf::plan_format {

namespace {

auto Quote(std::string_view s) -> std::string {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

auto NumberText(double v) -> std::string {
  if (std::trunc(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return std::to_string(v);
}

auto Indent(int depth) -> std::string { return std::string(static_cast<size_t>(depth) * 2, ' '); }

auto TypeText(Json json, bool nullable) -> std::string {
  static constexpr const char* kNames[] = {"string", "integer", "number", "boolean", "object", "array"};
  std::string type = Quote(kNames[static_cast<int>(json)]);
  return nullable ? "[" + type + ", \"null\"]" : type;
}

// A scalar's schema on one line, from its TypeInfo.
auto ScalarSchema(ValueType type) -> std::string {
  TypeInfo t = Describe(type);
  std::string out = "{ \"type\": " + TypeText(t.json, t.nullable);
  if (t.json == Json::String && t.min > 0) out += ", \"minLength\": " + NumberText(t.min);
  if (t.json == Json::Integer || t.json == Json::Number) {
    out += t.exclusive_min ? ", \"exclusiveMinimum\": " : ", \"minimum\": ";
    out += NumberText(t.min);
    if (t.max < 1e308) out += ", \"maximum\": " + NumberText(t.max);
  }
  return out + " }";
}

auto EnumSchema(const KeyInfo& k) -> std::string {
  std::string out = "{ \"enum\": [";
  for (size_t i = 0; i < k.choices.count; ++i) out += (i ? ", " : "") + Quote(k.choices.names[i]);
  if (k.type == ValueType::EnumOrNull) out += ", null";
  return out + "] }";
}

auto OrNull(const std::string& schema) -> std::string {
  return "{ \"oneOf\": [{ \"type\": \"null\" }, " + schema + "] }";
}

auto Children(Key parent) -> std::vector<const KeyInfo*> {
  std::vector<const KeyInfo*> out;
  for (const KeyInfo& k : kKeys) {
    bool written = k.id != Key::Root && k.id != Key::Shared && InVersion(k.id, kFormatVersion);
    if (k.parent == parent && written) out.push_back(&k);
  }
  return out;
}

auto ObjectSchema(Key key, int depth) -> std::string;

auto ValueSchema(const KeyInfo& k, int depth) -> std::string {
  using V = ValueType;
  const std::string location = "{ \"$ref\": \"#/$defs/location\" }";
  const std::string groups =
      "{ \"type\": \"array\", \"minItems\": 1, \"items\": { \"type\": \"array\", "
      "\"minItems\": 1, \"uniqueItems\": true, \"items\": " +
      ScalarSchema(V::Count) + " } }";
  switch (k.type) {
    case V::FormatName: return "{ \"const\": " + Quote(kFormatName) + " }";
    case V::FormatVersion: return "{ \"const\": " + std::to_string(kFormatVersion) + " }";
    case V::RankOrder: return "{ \"const\": " + Quote(kRankOrder) + " }";
    case V::Sha256OrNull: return "{ \"type\": [\"string\", \"null\"], \"pattern\": \"^[0-9a-f]{64}$\" }";
    case V::TokenBytes: return "{ \"enum\": [2, 4] }";
    case V::Enum:
    case V::EnumOrNull: return EnumSchema(k);
    case V::Object:
    case V::SharedObject: return ObjectSchema(k.id, depth);
    case V::ObjectOrNull:
      return "{\n" + Indent(depth + 1) + "\"oneOf\": [{ \"type\": \"null\" }, " + ObjectSchema(k.id, depth + 1) +
             "]\n" + Indent(depth) + "}";
    case V::Objects:
    case V::ObjectsOrEmpty:
      return "{\n" + Indent(depth + 1) + "\"type\": \"array\",\n" + Indent(depth + 1) +
             "\"minItems\": " + NumberText(Describe(k.type).min) + ",\n" + Indent(depth + 1) +
             "\"items\": " + ObjectSchema(k.id, depth + 1) + "\n" + Indent(depth) + "}";
    case V::Positives: return "{ \"type\": \"array\", \"minItems\": 1, \"items\": " + ScalarSchema(V::Positive) + " }";
    case V::GroupList:
    case V::OptionalGroupList: return groups;
    case V::Location: return location;
    case V::LocationOrNull: return OrNull(location);
    case V::BetasOrNull:
      return OrNull("{ \"type\": \"array\", \"minItems\": 2, \"maxItems\": 2, \"items\": " + ScalarSchema(V::Fraction) +
                    " }");
    default: return ScalarSchema(k.type);
  }
}

// {"type": "object", "additionalProperties": false, "required": [...], "properties": {...}}
auto ObjectSchema(Key key, int depth) -> std::string {
  std::vector<const KeyInfo*> keys = Children(key);
  std::string in = Indent(depth + 1), required, properties;
  for (const KeyInfo* k : keys) {
    if (!Optional(k->id)) required += (required.empty() ? "" : ", ") + Quote(k->spelling);
    properties +=
        (properties.empty() ? "" : ",\n") + Indent(depth + 2) + Quote(k->spelling) + ": " + ValueSchema(*k, depth + 2);
  }
  return "{\n" + in + "\"type\": \"object\",\n" + in + "\"additionalProperties\": false,\n" + in + "\"required\": [" +
         required + "],\n" + in + "\"properties\": {\n" + properties + "\n" + in + "}\n" + Indent(depth) + "}";
}

}  // namespace

void WriteSchema(std::ostream& out) {
  std::string root = ObjectSchema(Key::Root, 0);
  // The top-level header goes before the object's own members.
  std::string header =
      "{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n"
      "  \"title\": \"aviflow plan.json, format version " +
      std::to_string(kFormatVersion) +
      "\",\n  \"description\": \"Generated by avf-plan-schema from runtime/plan_format/keys.def; "
      "field meanings and units: docs/plan-format.md.\",\n";
  std::string defs = ",\n  \"$defs\": {\n    \"location\": " + ObjectSchema(Key::Location, 2) + "\n  }\n}\n";
  out << header << root.substr(2, root.size() - 4) << defs;
}

}  // namespace avf::plan_format
