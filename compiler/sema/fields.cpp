// Field evaluation with inheritance, defaults and cycle detection.
#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "sema/analyzer.h"

namespace avf::sema {

namespace {

// The body a field opens, for walking a dotted path: `parallel { ... }` or
// `topology = fat_tree { ... }`.
auto InnerBody(const ast::Field& field) -> const ast::Body* {
  if (field.record) return field.record.get();
  if (auto* r = llvm::dyn_cast_or_null<ast::RecordExpr>(field.value)) return r->body.get();
  return nullptr;
}

auto FindIn(const ast::Body& body, std::string_view name) -> const ast::Field* {
  for (const ast::Field& f : body.fields) {
    if (f.name.text == name) return &f;
  }
  return nullptr;
}

}  // namespace

// The field at `path` in the body of `decl` itself, if written there.
auto Analyzer::FindSiteIn(DeclId decl, PathId path) const -> const ast::Field* {
  const SchemaPath& p = Paths(decl)[path];
  const ast::Body* body = decls_[decl].body;
  if (p.parent != kRootPath) {
    const ast::Field* parent = FindSiteIn(decl, p.parent);
    body = parent ? InnerBody(*parent) : nullptr;
  }
  return body ? FindIn(*body, p.field->name) : nullptr;
}

// The nearest declaration up the inheritance chain that writes `path`.
auto Analyzer::FindSite(DeclId decl, PathId path) -> std::optional<Site> {
  if (const ast::Field* field = FindSiteIn(decl, path)) return Site{field, decl};
  std::vector<DeclId> walked;
  std::optional<Site> found;
  for (std::optional<DeclId> d = program_.decls[decl].base; d; d = program_.decls[*d].base) {
    if (auto it = base_sites_.find(SlotIndex(*d, path)); it != base_sites_.end()) {
      found = it->second;
      break;
    }
    walked.push_back(*d);
    if (const ast::Field* field = FindSiteIn(*d, path)) {
      found = Site{field, *d};
      break;
    }
  }
  // Only bases are worth remembering: `decl` itself asks once per path, its
  // bases once per declaration below them.
  for (DeclId base : walked) base_sites_[SlotIndex(base, path)] = found;
  return found;
}

auto Analyzer::ReportCycle(DeclId decl, PathId path, llvm::SMRange use) -> FieldValue {
  const SchemaPath& p = Paths(decl)[path];
  diags_.Report(diag::DiagId::FieldCycle, use, program_.decls[decl].name + "." + p.joined);
  return FieldValue{Paths(decl).IndexInParent(path), Origin::Written, decl, Value::Error()};
}

auto Analyzer::Evaluate(DeclId decl, PathId path, llvm::SMRange use) -> std::optional<FieldValue> {
  uint32_t index = SlotIndex(decl, path);
  if (eval_depth_ >= kMaxEvalDepth) {
    // Stops a stack overflow on reference chains no real file has (see
    // sema.cpp, Analyze). The slot stays unvisited: nothing was computed.
    const SchemaPath& p = Paths(decl)[path];
    diags_.Report(diag::DiagId::ReferenceTooDeep, use, program_.decls[decl].name + "." + p.joined, kMaxEvalDepth)
        .Help("write the value directly somewhere along the chain");
    return FieldValue{Paths(decl).IndexInParent(path), Origin::Written, decl, Value::Error()};
  }
  slots_[index].setInt(SlotState::InProgress);
  ++eval_depth_;
  std::optional<FieldValue> value = Compute(decl, path);
  --eval_depth_;
  slots_[index].setInt(value ? SlotState::Pending : SlotState::Absent);
  return value;
}

auto Analyzer::EvalField(DeclId decl, PathId path, llvm::SMRange use) -> std::optional<FieldValue> {
  return Obtain(decl, path, use, /*take=*/false);
}

auto Analyzer::Obtain(DeclId decl, PathId path, llvm::SMRange use, bool take) -> std::optional<FieldValue> {
  uint32_t index = SlotIndex(decl, path);
  switch (slots_[index].getInt()) {
    case SlotState::Pending:
      if (take) return std::move(pending_.extract(index).mapped());
      [[fallthrough]];
    case SlotState::Placed: return *slots_[index].getPointer();
    case SlotState::Absent: return std::nullopt;
    case SlotState::InProgress: return ReportCycle(decl, path, use);
    case SlotState::Unvisited: break;
  }
  std::optional<FieldValue> value = Evaluate(decl, path, use);
  if (!take && value && slots_[index].getInt() == SlotState::Pending) {
    slots_[index].setPointer(&pending_.insert_or_assign(index, *value).first->second);
  }
  return value;
}

auto Analyzer::Compute(DeclId decl, PathId path) -> std::optional<FieldValue> {
  std::optional<Site> site = FindSite(decl, path);
  const FieldSchema& schema = *Paths(decl)[path].field;
  if (schema.type == FieldType::Record) return ComputeRecord(decl, path, site);
  if (!site) return DefaultFor(decl, path);
  if (site->decl != decl) {
    // Evaluated once, in the declaration that wrote it.
    std::optional<FieldValue> inherited = EvalField(site->decl, path, site->field->range());
    if (inherited && inherited->origin == Origin::Written) inherited->origin = Origin::Inherited;
    return inherited;
  }
  return ComputeWritten(decl, path, *site);
}

auto Analyzer::ComputeRecord(DeclId decl, PathId path, const std::optional<Site>& site) -> std::optional<FieldValue> {
  const FieldSchema& schema = *Paths(decl)[path].field;
  // An optional record that is not written is absent if it has required
  // fields (topology), else it holds its defaults (parallel, optimizer).
  if (!site) {
    const FieldValue* defaults = ConstantDefault(schema);
    return defaults ? std::optional<FieldValue>(*defaults) : std::nullopt;
  }
  // `topology = 3` is reported by CheckBody; its fields are not missing.
  uint16_t index = Paths(decl).IndexInParent(path);
  if (!InnerBody(*site->field)) return FieldValue{index, Origin::Written, site->decl, Value::Error()};
  Origin origin = site->decl == decl ? Origin::Written : Origin::Inherited;
  FieldValue fv{index, origin, site->decl, Value::Of(Value::Kind::Record, site->field->range())};
  fv.value.SetRecord(BuildRecord(decl, path, site->field->name.range));
  return fv;
}

auto Analyzer::ComputeWritten(DeclId decl, PathId path, const Site& site) -> std::optional<FieldValue> {
  const SchemaPath& p = Paths(decl)[path];
  uint16_t index = Paths(decl).IndexInParent(path);
  if (!site.field->value) return FieldValue{index, Origin::Written, decl, Value::Error()};
  Value v = EvaluateField(*this, *site.field->value, *p.field, decl, p.joined);
  return FieldValue{index, Origin::Written, decl, std::move(v)};
}

auto Analyzer::DefaultFor(DeclId decl, PathId path) -> std::optional<FieldValue> {
  const FieldSchema& schema = *Paths(decl)[path].field;
  if (const FieldValue* constant = ConstantDefault(schema)) return *constant;
  if (!schema.default_value || schema.default_value->kind != DefaultValue::Kind::SameAs) return std::nullopt;
  std::optional<PathId> sibling = Paths(decl).Child(Paths(decl)[path].parent, schema.default_value->text);
  std::optional<FieldValue> same = sibling ? EvalField(decl, *sibling, program_.decls[decl].name_range) : std::nullopt;
  if (!same) return std::nullopt;
  return FieldValue{Paths(decl).IndexInParent(path), Origin::Defaulted, decl, same->value};
}

// Builds the record at `prefix` (the root: the declaration itself). Each
// field's value is moved into the record, which from then on holds it; the
// record holds exactly the fields present, since most optional ones are not.
auto Analyzer::BuildRecord(DeclId decl, PathId prefix, llvm::SMRange where) -> RecordValue {
  const RecordSchema& schema = *Paths(decl)[prefix].record;
  // Records nest (a field's value may build another declaration's record):
  // each level takes a scratch of its own from the pool.
  Scratch scratch;
  if (!scratch_pool_.empty()) {
    scratch = std::move(scratch_pool_.back());
    scratch_pool_.pop_back();
  }
  scratch.gathered.reserve(schema.fields.size());  // so that a Placed slot may point in it meanwhile
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    PathId path = Paths(decl).ChildAt(prefix, i);
    std::optional<FieldValue> value = Obtain(decl, path, where, /*take=*/true);
    if (!value) {
      if (schema.fields[i].required) ReportMissing(decl, path, where);
      continue;
    }
    uint32_t index = SlotIndex(decl, path);
    const FieldValue* constant = value->origin == Origin::Defaulted ? ConstantDefault(schema.fields[i]) : nullptr;
    if (constant) {
      // Not stored: RecordValue::Find answers with it.
      slots_[index].setInt(SlotState::Placed);
      slots_[index].setPointer(constant);
      continue;
    }
    scratch.gathered.push_back(std::move(*value));
    if (slots_[index].getInt() != SlotState::Pending) continue;
    slots_[index].setInt(SlotState::Placed);
    slots_[index].setPointer(&scratch.gathered.back());
    scratch.placed.emplace_back(scratch.gathered.size() - 1, index);
  }
  RecordValue record;
  record.schema = &schema;
  record.fields.assign(std::make_move_iterator(scratch.gathered.begin()),
                       std::make_move_iterator(scratch.gathered.end()));
  for (auto [at, index] : scratch.placed) slots_[index].setPointer(&record.fields[at]);
  scratch.gathered.clear();
  scratch.placed.clear();
  scratch_pool_.push_back(std::move(scratch));
  return record;
}

auto Analyzer::InheritsFromBrokenBase(DeclId decl) const -> bool {
  // Inline instances come after the table was built; their base is in it.
  if (decl >= broken_chain_.size()) {
    std::optional<DeclId> base = program_.decls[decl].base;
    return decls_[decl].base_broken || (base && InheritsFromBrokenBase(*base));
  }
  return broken_chain_[decl];
}

void Analyzer::ReportMissing(DeclId decl, PathId path, llvm::SMRange where) {
  if (InheritsFromBrokenBase(decl)) return;
  const Decl& d = program_.decls[decl];
  const SchemaPath& p = Paths(decl)[path];
  std::string owner = fmt::format("{} `{}`", ast::KeywordOf(d.kind), d.name);
  if (p.parent != kRootPath) owner = fmt::format("`{}` of {}", Paths(decl)[p.parent].joined, owner);
  auto b = diags_.Report(diag::DiagId::MissingField, where, owner, p.field->name);
  b.Help(fmt::format("add `{} = ...` ({})", p.field->name, DescribeType(*p.field)));
}

}  // namespace avf::sema
