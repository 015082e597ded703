// Rules that relate several fields of one declaration, and text formats the
// schema cannot express. Checks against the cluster and the planner's model
// belong to compiler/check.
#include <algorithm>

#include <fmt/format.h>

#include "sema/analyzer.h"

namespace avf::sema {

namespace {

auto Integer(const RecordValue& r, std::string_view name) -> std::optional<int64_t> {
  const FieldValue* f = r.Find(name);
  if (!f || f->value.kind != Value::Kind::Quantity || !f->value.quantity.is_integer()) return std::nullopt;
  return f->value.quantity.integer();
}

auto EnumText(const RecordValue& r, std::string_view name) -> std::string {
  const FieldValue* f = r.Find(name);
  return f && f->value.kind == Value::Kind::Enum ? f->value.text() : "";
}

// Where to point for a field: its value if written here, else the name.
auto RangeOf(const Decl& d, std::string_view name) -> llvm::SMRange {
  const FieldValue* f = d.fields.Find(name);
  return f && f->value.range.isValid() ? f->value.range : d.name_range;
}

// True when every one of `names` comes from a base declaration: the base
// breaks the rule with the same values and reports it there, once.
auto AllInherited(const Decl& d, std::initializer_list<std::string_view> names) -> bool {
  for (std::string_view name : names) {
    const FieldValue* f = d.fields.Find(name);
    if (!f || f->origin != Origin::Inherited) return false;
  }
  return true;
}

void CheckStorage(diag::DiagnosticEngine& diags, const Decl& d) {
  std::string kind = EnumText(d.fields, "kind");
  std::vector<std::string_view> needed;
  if (kind == "ceph" || kind == "s3" || kind == "minio") needed = {"endpoint", "bucket"};
  if (kind == "beegfs" || kind == "lustre" || kind == "nfs" || kind == "local") needed = {"mount"};
  if (kind == "pvc") needed = {"claim"};
  for (std::string_view field : needed) {
    if (d.fields.Find(field)) continue;
    diags.Report(diag::DiagId::StorageFieldRequired, d.name_range, kind, d.name, field)
        .Note(RangeOf(d, "kind"), fmt::format("`kind = {}` is set here", kind));
  }
}

void CheckModel(diag::DiagnosticEngine& diags, const Decl& d) {
  auto hidden = Integer(d.fields, "hidden");
  auto heads = Integer(d.fields, "heads");
  auto kv_heads = Integer(d.fields, "kv_heads");
  if (hidden && heads && *hidden % *heads != 0 && !AllInherited(d, {"hidden", "heads"})) {
    diags.Report(diag::DiagId::HeadsDoNotDivideHidden, RangeOf(d, "heads"), *hidden, *heads)
        .Note(RangeOf(d, "hidden"), "hidden size set here");
  }
  if (heads && kv_heads && *heads % *kv_heads != 0 && !AllInherited(d, {"heads", "kv_heads"})) {
    diags.Report(diag::DiagId::KvHeadsDoNotDivideHeads, RangeOf(d, "kv_heads"), *heads, *kv_heads)
        .Help("`heads` must be a multiple of `kv_heads` (grouped-query attention)");
  }
}

// `currency` is an ISO 4217 code: three capital letters.
void CheckCluster(diag::DiagnosticEngine& diags, const Decl& d) {
  const FieldValue* f = d.fields.Find("currency");
  if (!f || f->value.kind != Value::Kind::String || f->origin == Origin::Inherited) return;
  const std::string& code = f->value.text();
  bool valid =
      code.size() == 3 && std::all_of(code.begin(), code.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
  if (!valid) {
    diags.Report(diag::DiagId::OutOfRange, RangeOf(d, "currency"), "currency",
                 "an ISO 4217 code of three capital letters, such as \"EUR\"", diag::Quote(diag::ShortText(code)));
  }
}

void CheckJob(diag::DiagnosticEngine& diags, const Decl& d) {
  std::vector<std::string_view> set;
  for (std::string_view f : {"steps", "tokens", "epochs"}) {
    if (d.fields.Find(f)) set.push_back(f);
  }
  if (set.empty()) {
    diags.Report(diag::DiagId::MissingTrainingLength, d.name_range, d.name)
        .Help("add one of `steps = 10000`, `tokens = 300G` or `epochs = 1`");
  } else if (set.size() > 1 && !AllInherited(d, {set[0], set[1]})) {
    diags.Report(diag::DiagId::ConflictingTrainingLength, RangeOf(d, set[1]), d.name, set[0], set[1])
        .Note(RangeOf(d, set[0]), fmt::format("`{}` is set here", set[0]))
        .Help("keep exactly one of `steps`, `tokens` or `epochs`");
  }
}

}  // namespace

void CheckRules(Analyzer& analyzer, const Program& program) {
  for (const Decl& d : program.decls) {
    switch (d.kind) {
      case ast::DeclKind::Storage: CheckStorage(analyzer.diags(), d); break;
      case ast::DeclKind::Model: CheckModel(analyzer.diags(), d); break;
      case ast::DeclKind::Cluster: CheckCluster(analyzer.diags(), d); break;
      case ast::DeclKind::Job: CheckJob(analyzer.diags(), d); break;
      default: break;
    }
  }
}

}  // namespace avf::sema
