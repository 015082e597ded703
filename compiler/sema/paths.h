// Every field path a declaration kind's schema allows, numbered: sema keeps
// its per-field state in arrays indexed by these ids rather than in maps
// keyed by joined strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ast/ast.h"
#include "sema/schema.h"

namespace avf::sema {

using PathId = uint16_t;
inline constexpr PathId kRootPath = 0;

struct SchemaPath {
  const FieldSchema* field = nullptr;    // null for the root
  const RecordSchema* record = nullptr;  // the fields below it, if any
  PathId parent = kRootPath;
  PathId first_child = 0;  // a record's fields are numbered together, in schema order
  std::string joined;      // "parallel.tensor"; empty for the root
};

class SchemaPaths {
 public:
  explicit SchemaPaths(const RecordSchema& root);
  auto Child(PathId parent, std::string_view name) const -> std::optional<PathId>;
  auto ChildAt(PathId parent, size_t index) const -> PathId { return paths_[parent].first_child + index; }
  // The field's index in its record's schema (the inverse of ChildAt).
  auto IndexInParent(PathId id) const -> uint16_t {
    return static_cast<uint16_t>(id - paths_[paths_[id].parent].first_child);
  }
  auto operator[](PathId id) const -> const SchemaPath& { return paths_[id]; }
  auto size() const -> size_t { return paths_.size(); }

 private:
  std::vector<SchemaPath> paths_;
};

auto PathsOf(ast::DeclKind kind) -> const SchemaPaths&;

}  // namespace avf::sema
