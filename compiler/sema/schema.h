// What each declaration kind may contain (docs/language.md, Kinds and their fields): field names, types,
// dimensions, ranges, enum values, defaults and which are required. Sema
// checks every body against these tables; docs/language.md lists them.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "ast/ast.h"
#include "units/quantity.h"

namespace avf::sema {

enum class FieldType : uint8_t {
  Quantity,  // a number of a given dimension
  String,
  Bool,
  Enum,             // a bare name from a fixed set: `arch = llama`
  Ref,              // a declaration of a given kind: `model = llm7b`
  Location,         // STORAGE / "path"
  Secret,           // secret("name")
  Record,           // nested fields: `parallel { ... }`
  List,             // [a, b]
  CountOrDuration,  // a step count or a time: `every = 2000` / `30min`
};

struct RecordSchema;

struct DefaultValue {
  enum class Kind : uint8_t { Integer, Real, Enum, Bool, Auto, SameAs };
  Kind kind = Kind::Integer;
  int64_t integer = 0;
  double real = 0;
  std::string_view text;  // Enum value, or the sibling field for SameAs
  bool boolean = false;
};

struct FieldSchema {
  std::string_view name;
  FieldType type = FieldType::Quantity;
  units::Dimension dim{};
  bool integer = false;
  std::optional<double> min;
  std::optional<double> max;
  bool min_exclusive = false;
  std::vector<std::string_view> enum_values;
  ast::DeclKind ref_kind{};
  const RecordSchema* record = nullptr;
  std::shared_ptr<const FieldSchema> element;  // List
  size_t min_items = 0;
  size_t max_items = std::numeric_limits<size_t>::max();
  bool required = false;
  bool allow_auto = false;
  std::optional<DefaultValue> default_value;
  std::string_view doc;
  std::string_view counts;  // what a count field counts ("sequences"), for unit hints
};

struct RecordSchema {
  std::string_view name;  // "gpu", "job.parallel", "fat_tree"
  std::vector<FieldSchema> fields;
  auto Find(std::string_view field) const -> const FieldSchema*;
  auto FieldNames() const -> std::vector<std::string>;
};

auto SchemaOf(ast::DeclKind kind) -> const RecordSchema&;
// Records written as `TYPE { ... }` in an expression: fat_tree.
auto BuiltinRecord(std::string_view type) -> const RecordSchema*;

// "bytes", "a whole number", "a `model`", "one of `adamw` or `sgd`".
auto DescribeType(const FieldSchema& field) -> std::string;
// "`adamw` or `sgd`", "`a`, `b` or `c`".
auto JoinAlternatives(const std::vector<std::string_view>& words) -> std::string;
// "at least 1", "between 0 and 3".
auto DescribeRange(const FieldSchema& field) -> std::string;

}  // namespace avf::sema
