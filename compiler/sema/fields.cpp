// Field evaluation with inheritance, defaults and cycle detection.
#include <algorithm>

#include <fmt/format.h>

#include "sema/analyzer.h"

namespace avf::sema {

namespace {

// The body a field opens, for walking a dotted path: `parallel { ... }` or
// `topology = fat_tree { ... }`.
auto InnerBody(const ast::Field& field) -> const ast::Body* {
  if (field.record) return field.record.get();
  if (auto* r = llvm::dyn_cast_or_null<ast::RecordExpr>(field.value.get())) return r->body.get();
  return nullptr;
}

auto FindIn(const ast::Body& body, std::string_view name) -> const ast::Field* {
  for (const ast::Field& f : body.fields) {
    if (f.name.text == name) return &f;
  }
  return nullptr;
}

}  // namespace

auto Analyzer::SchemaAt(ast::DeclKind kind, const FieldPath& path) const -> const FieldSchema* {
  const RecordSchema* record = &SchemaOf(kind);
  const FieldSchema* field = nullptr;
  for (const std::string& segment : path) {
    if (!record) return nullptr;
    field = record->Find(segment);
    if (!field) return nullptr;
    record = field->type == FieldType::Record ? field->record : nullptr;
  }
  return field;
}

// The field at `path` in the body of `decl` itself, if written there.
auto Analyzer::FindSiteIn(DeclId decl, const FieldPath& path) const -> const ast::Field* {
  const ast::Body* body = decls_[decl].body;
  const ast::Field* field = nullptr;
  for (size_t i = 0; body && i < path.size(); ++i) {
    field = FindIn(*body, path[i]);
    if (!field) return nullptr;
    body = i + 1 < path.size() ? InnerBody(*field) : nullptr;
  }
  return field && field->name.text == path.back() ? field : nullptr;
}

// The nearest declaration up the inheritance chain that writes `path`.
auto Analyzer::FindSite(DeclId decl, const FieldPath& path, const std::string& key) -> std::optional<Site> {
  std::vector<DeclId> walked;
  std::optional<Site> found;
  for (std::optional<DeclId> d = decl; d; d = decls_[*d].base) {
    if (auto it = sites_.find({*d, key}); it != sites_.end()) {
      found = it->second;
      break;
    }
    walked.push_back(*d);
    if (const ast::Field* field = FindSiteIn(*d, path)) {
      found = Site{field, *d};
      break;
    }
  }
  // Only the bases walked are worth remembering: `decl` itself asks once
  // per path (EvalField memoizes), its bases once per declaration below them.
  for (size_t i = 1; i < walked.size(); ++i) sites_[{walked[i], key}] = found;
  return found;
}

auto Analyzer::EvalField(DeclId decl, const FieldPath& path, llvm::SMRange use) -> std::optional<FieldValue> {
  const FieldSchema* schema = SchemaAt(decls_[decl].kind, path);
  if (!schema) return std::nullopt;
  auto key = std::make_pair(decl, JoinPath(path));
  if (auto it = memo_.find(key); it != memo_.end()) {
    if (it->second.state == EvalState::Done) return it->second.value;
    diags_.Report(diag::DiagId::FieldCycle, use, decls_[decl].name + "." + key.second);
    FieldValue broken{path.back(), Value::Error(), Origin::Written, decl};
    return broken;
  }
  if (eval_depth_ >= kMaxEvalDepth) {
    // Stops a stack overflow on reference chains no real file has (see
    // sema.cpp, Analyze).
    diags_.Report(diag::DiagId::ReferenceTooDeep, use, decls_[decl].name + "." + key.second, kMaxEvalDepth)
        .Help("write the value directly somewhere along the chain");
    return FieldValue{path.back(), Value::Error(), Origin::Written, decl};
  }
  // A reference into the map stays valid while Compute adds entries.
  auto& [stored_key, memo] = *memo_.emplace(std::move(key), Memo{EvalState::InProgress, std::nullopt}).first;
  ++eval_depth_;
  std::optional<FieldValue> value = Compute(decl, path, stored_key.second, *schema);
  --eval_depth_;
  memo = {EvalState::Done, value};
  return value;
}

auto Analyzer::Compute(DeclId decl, const FieldPath& path, const std::string& joined, const FieldSchema& schema)
    -> std::optional<FieldValue> {
  std::optional<Site> site = FindSite(decl, path, joined);
  if (schema.type == FieldType::Record) {
    // An optional record that is not written is absent if it has required
    // fields (topology), else it holds its defaults (parallel, optimizer).
    bool has_required = std::any_of(schema.record->fields.begin(), schema.record->fields.end(),
                                    [](const FieldSchema& f) { return f.required; });
    if (!site && has_required) return std::nullopt;
    // `topology = 3` is reported by CheckBody; its fields are not missing.
    if (site && !InnerBody(*site->field)) return FieldValue{path.back(), Value::Error(), Origin::Written, site->decl};
    llvm::SMRange where = site ? site->field->name.range : decls_[decl].name_range;
    Origin origin = !site ? Origin::Defaulted : site->decl == decl ? Origin::Written : Origin::Inherited;
    FieldValue fv{path.back(), Value::Of(Value::Kind::Record, site ? site->field->range : llvm::SMRange()), origin,
                  site ? site->decl : decl};
    fv.value.record = std::make_shared<RecordValue>(BuildRecord(decl, path, *schema.record, where));
    return fv;
  }
  if (!site) return DefaultFor(decl, path, schema);
  if (site->decl != decl) {
    // Evaluated once, in the declaration that wrote it.
    std::optional<FieldValue> inherited = EvalField(site->decl, path, site->field->range);
    if (inherited && inherited->origin == Origin::Written) inherited->origin = Origin::Inherited;
    return inherited;
  }
  return ComputeWritten(decl, path, schema, *site);
}

auto Analyzer::ComputeWritten(DeclId decl, const FieldPath& path, const FieldSchema& schema, const Site& site)
    -> std::optional<FieldValue> {
  if (!site.field->value) return FieldValue{path.back(), Value::Error(), Origin::Written, decl};
  Value v = EvaluateField(*this, *site.field->value, schema, decl, path);
  return FieldValue{path.back(), std::move(v), Origin::Written, decl};
}

auto Analyzer::DefaultFor(DeclId decl, const FieldPath& path, const FieldSchema& schema) -> std::optional<FieldValue> {
  if (!schema.default_value) return std::nullopt;
  const DefaultValue& d = *schema.default_value;
  FieldValue fv{path.back(), Value{}, Origin::Defaulted, decl};
  Value& v = fv.value;
  switch (d.kind) {
    case DefaultValue::Kind::Integer:
      v = Value::Of(Value::Kind::Quantity, {});
      v.quantity = units::Quantity::Integer(d.integer, schema.dim);
      break;
    case DefaultValue::Kind::Real:
      v = Value::Of(Value::Kind::Quantity, {});
      v.quantity = units::Quantity::Real(d.real, schema.dim);
      break;
    case DefaultValue::Kind::Enum:
      v = Value::Of(Value::Kind::Enum, {});
      v.text = std::string(d.text);
      break;
    case DefaultValue::Kind::Bool:
      v = Value::Of(Value::Kind::Bool, {});
      v.boolean = d.boolean;
      break;
    case DefaultValue::Kind::Auto: v = Value::Of(Value::Kind::Auto, {}); break;
    case DefaultValue::Kind::SameAs: {
      FieldPath sibling = path;
      sibling.back() = std::string(d.text);
      std::optional<FieldValue> same = EvalField(decl, sibling, decls_[decl].name_range);
      if (!same) return std::nullopt;
      fv.value = same->value;
      break;
    }
  }
  return fv;
}

auto Analyzer::BuildRecord(DeclId decl, const FieldPath& prefix, const RecordSchema& schema, llvm::SMRange where)
    -> RecordValue {
  RecordValue record;
  record.schema = &schema;
  record.fields.reserve(schema.fields.size());
  FieldPath path = prefix;
  path.emplace_back();
  for (const FieldSchema& field : schema.fields) {
    path.back() = field.name;
    std::optional<FieldValue> value = EvalField(decl, path, where);
    if (value) {
      record.fields.push_back(std::move(*value));
    } else if (field.required) {
      ReportMissing(decl, path, where);
    }
  }
  return record;
}

auto Analyzer::InheritsFromBrokenBase(DeclId decl) const -> bool {
  // Inline instances come after the table was built; their base is in it.
  if (decl >= broken_chain_.size()) {
    const DeclState& d = decls_[decl];
    return d.base_broken || (d.base && InheritsFromBrokenBase(*d.base));
  }
  return broken_chain_[decl];
}

void Analyzer::ReportMissing(DeclId decl, const FieldPath& path, llvm::SMRange where) {
  if (InheritsFromBrokenBase(decl)) return;
  const DeclState& d = decls_[decl];
  std::string owner = fmt::format("{} `{}`", ast::KeywordOf(d.kind), d.name);
  if (path.size() > 1) {
    FieldPath parent(path.begin(), path.end() - 1);
    owner = fmt::format("`{}` of {}", JoinPath(parent), owner);
  }
  const FieldSchema* schema = SchemaAt(d.kind, path);
  auto b = diags_.Report(diag::DiagId::MissingField, where, owner, path.back());
  if (schema) b.Help(fmt::format("add `{} = ...` ({})", path.back(), DescribeType(*schema)));
}

}  // namespace avf::sema
