#include "sema/paths.h"

#include <cassert>
#include <limits>

namespace avf::sema {

// Breadth first, so that each record's fields get consecutive ids.
SchemaPaths::SchemaPaths(const RecordSchema& root) {
  paths_.push_back({nullptr, &root, kRootPath, 0, ""});
  for (size_t id = 0; id < paths_.size(); ++id) {
    const RecordSchema* record = paths_[id].record;
    if (!record) continue;
    paths_[id].first_child = static_cast<PathId>(paths_.size());
    for (const FieldSchema& field : record->fields) {
      std::string joined =
          id == kRootPath ? std::string(field.name) : paths_[id].joined + "." + std::string(field.name);
      const RecordSchema* inner = field.type == FieldType::Record ? field.record : nullptr;
      paths_.push_back({&field, inner, static_cast<PathId>(id), 0, std::move(joined)});
    }
  }
  assert(paths_.size() <= std::numeric_limits<PathId>::max());
}

auto SchemaPaths::Child(PathId parent, std::string_view name) const -> std::optional<PathId> {
  const RecordSchema* record = paths_[parent].record;
  if (!record) return std::nullopt;
  const FieldSchema* field = record->Find(name);
  if (!field) return std::nullopt;
  return ChildAt(parent, static_cast<size_t>(field - record->fields.data()));
}

auto PathsOf(ast::DeclKind kind) -> const SchemaPaths& {
  static const std::vector<SchemaPaths> kTables = [] {
    std::vector<SchemaPaths> tables;
    for (size_t k = 0; k < ast::kDeclKindCount; ++k) tables.emplace_back(SchemaOf(static_cast<ast::DeclKind>(k)));
    return tables;
  }();
  return kTables[static_cast<size_t>(kind)];
}

}  // namespace avf::sema
