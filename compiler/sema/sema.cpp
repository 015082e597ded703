#include "sema/sema.h"

#include <algorithm>
#include <numeric>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Support/thread.h>

#include "sema/analyzer.h"

namespace avf::sema {

Analyzer::Analyzer(const imports::ModuleSet& modules, diag::DiagnosticEngine& diags)
    : modules_(modules), diags_(diags) {}

auto Analyzer::Run() -> Program {
  Collect();
  ResolveBases();
  for (DeclId id = 0; id < decls_.size(); ++id) {
    if (decls_[id].body && !program_.decls[id].is_inline) {
      CheckBody(*decls_[id].body, SchemaOf(program_.decls[id].kind),
                std::string(ast::KeywordOf(program_.decls[id].kind)));
    }
  }
  // Inline instances are appended while evaluating, so the bound is re-read.
  for (DeclId id = 0; id < decls_.size(); ++id) {
    program_.decls[id].fields = BuildRecord(id, kRootPath, program_.decls[id].name_range);
  }
  CheckRules(*this, program_);
  return std::move(program_);
}

namespace {

// Imported files first, the main file last, as a reader meets them: a name
// declared twice is reported at the second declaration, which for a clash
// with an import (the stdlib, say) is the one in the file being checked.
auto CollectionOrder(const imports::ModuleSet& modules) -> std::vector<size_t> {
  std::vector<size_t> order = modules.dependency_order;
  if (order.size() != modules.modules.size()) {
    order.resize(modules.modules.size());
    std::iota(order.begin(), order.end(), size_t{0});
  }
  return order;
}

// The first field of a body with a given name: bodies are short, so a scan
// beats a map, except in generated files with very many fields.
class FirstOfName {
 public:
  explicit FirstOfName(const ast::Body& body) : body_(body) {
    if (body.fields.size() <= kScanUpTo) return;
    for (const ast::Field& f : body.fields) by_name_.try_emplace(f.name.text, &f);
  }
  auto Find(const ast::Field& field) const -> const ast::Field* {
    if (body_.fields.size() > kScanUpTo) return by_name_.lookup(field.name.text);
    for (const ast::Field& f : body_.fields) {
      if (f.name.text == field.name.text) return &f;
    }
    return &field;
  }

 private:
  static constexpr size_t kScanUpTo = 32;
  const ast::Body& body_;
  llvm::StringMap<const ast::Field*> by_name_;
};

}  // namespace

// Sizes the per-declaration arrays once: on a large file, growing them by
// doubling would hold up to twice the memory at the peak.
void Analyzer::Reserve() {
  size_t decls = 0;
  size_t slots = 0;
  for (const imports::Module& module : modules_.modules) {
    for (const ast::Decl& d : module.ast.decls) {
      if (!d.kind) continue;
      ++decls;
      slots += PathsOf(*d.kind).size();
    }
  }
  decls_.reserve(decls);
  program_.decls.reserve(decls);
  slot_base_.reserve(decls);
  decl_paths_.reserve(decls);
  slots_.reserve(slots);
}

void Analyzer::Collect() {
  Reserve();
  for (size_t index : CollectionOrder(modules_)) {
    const imports::Module& module = modules_.modules[index];
    for (const ast::Decl& d : module.ast.decls) {
      if (!d.kind) continue;  // unknown keyword, reported by the parser
      if (auto it = by_name_.find(d.name.text); it != by_name_.end()) {
        diags_.Report(diag::DiagId::DuplicateDecl, d.name.range, d.name.text)
            .Note(program_.decls[it->second].name_range, "previous declaration is here")
            .Help("rename one of them; names are shared by every imported file");
        continue;
      }
      by_name_.try_emplace(d.name.text, static_cast<DeclId>(decls_.size()));
      AddDecl({&d.body, d.base ? &*d.base : nullptr}, {.kind = *d.kind,
                                                       .name = std::string(d.name.text),
                                                       .name_range = d.name.range,
                                                       .buffer_id = module.buffer_id,
                                                       .in_stdlib = module.is_stdlib});
    }
  }
}

void Analyzer::ResolveBases() {
  for (DeclId id = 0; id < decls_.size(); ++id) {
    DeclState& d = decls_[id];
    Decl& decl = program_.decls[id];
    if (!d.base_name) continue;
    auto base = Lookup(d.base_name->text);
    if (!base) {
      auto b = diags_.Report(diag::DiagId::UnknownName, d.base_name->range, d.base_name->text);
      if (!SuggestStdImport(b, std::string(d.base_name->text), decl.buffer_id))
        b.Suggest(d.base_name->range, diag::ClosestMatch(d.base_name->text, NamesOfKind(decl.kind)));
      d.base_broken = true;
      continue;
    }
    if (program_.decls[*base].kind != decl.kind) {
      diags_
          .Report(diag::DiagId::BaseKindMismatch, d.base_name->range, ast::KeywordOf(decl.kind), decl.name,
                  d.base_name->text, ast::KeywordOf(program_.decls[*base].kind))
          .Note(program_.decls[*base].name_range, fmt::format("`{}` is declared here", d.base_name->text));
      d.base_broken = true;
      continue;
    }
    decl.base = base;
  }
  BreakBaseCycles();
  MarkBrokenChains();
}

// Whether a broken base is anywhere up each chain; every chain is walked
// once, bases before the declarations derived from them.
void Analyzer::MarkBrokenChains() {
  broken_chain_.assign(decls_.size(), false);
  std::vector<char> known(decls_.size(), 0);
  for (DeclId id = 0; id < decls_.size(); ++id) {
    std::vector<DeclId> chain;
    std::optional<DeclId> d = id;
    for (; d && !known[*d]; d = program_.decls[*d].base) chain.push_back(*d);
    bool broken = d && broken_chain_[*d];
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      broken = broken || decls_[*it].base_broken;
      broken_chain_[*it] = broken;
      known[*it] = 1;
    }
  }
}

// Breaks inheritance cycles (a : b, b : a) so that later walks terminate:
// each declaration is walked once (every one has at most one base), and a
// cycle is reported at its member declared first.
void Analyzer::BreakBaseCycles() {
  enum : char { kUnseen, kOnPath, kDone };
  std::vector<char> state(decls_.size(), kUnseen);
  for (DeclId id = 0; id < decls_.size(); ++id) {
    std::vector<DeclId> path;
    std::optional<DeclId> d = id;
    for (; d && state[*d] == kUnseen; d = program_.decls[*d].base) {
      state[*d] = kOnPath;
      path.push_back(*d);
    }
    if (d && state[*d] == kOnPath) {
      ReportBaseCycle(std::vector<DeclId>(std::find(path.begin(), path.end(), *d), path.end()));
    }
    for (DeclId p : path) state[p] = kDone;
  }
}

void Analyzer::ReportBaseCycle(const std::vector<DeclId>& cycle) {
  auto first = std::min_element(cycle.begin(), cycle.end());
  std::string chain;
  for (size_t i = 0; i <= cycle.size(); ++i) {
    DeclId member = cycle[(static_cast<size_t>(first - cycle.begin()) + i) % cycle.size()];
    chain += (i == 0 ? "" : " -> ") + program_.decls[member].name;
  }
  diags_.Report(diag::DiagId::InheritanceCycle, decls_[*first].base_name->range, program_.decls[*first].name, chain);
  program_.decls[*first].base.reset();
  decls_[*first].base_broken = true;
}

auto Analyzer::Lookup(std::string_view name) const -> std::optional<DeclId> {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

auto Analyzer::NamesOfKind(std::optional<ast::DeclKind> kind) const -> std::vector<std::string> {
  std::vector<std::string> names;
  for (const Decl& d : program_.decls) {
    if (!d.is_inline && (!kind || d.kind == *kind)) names.push_back(d.name);
  }
  return names;
}

void Analyzer::AddDecl(DeclState state, Decl decl) {
  slot_base_.push_back(static_cast<uint32_t>(slots_.size()));
  decl_paths_.push_back(&PathsOf(decl.kind));
  slots_.resize(slots_.size() + PathsOf(decl.kind).size());  // Unvisited
  decls_.push_back(state);
  program_.decls.push_back(std::move(decl));
}

auto Analyzer::AddInline(const ast::RecordExpr& expr, DeclId base, DeclId owner, std::string_view path) -> DeclId {
  DeclId id = static_cast<DeclId>(decls_.size());
  const Decl& o = program_.decls[owner];
  ast::DeclKind kind = program_.decls[base].kind;
  AddDecl({expr.body.get(), nullptr}, {.kind = kind,
                                       .name = o.name + "." + std::string(path),
                                       .name_range = expr.range(),
                                       .base = base,
                                       .buffer_id = o.buffer_id,
                                       .is_inline = true,
                                       .in_stdlib = o.in_stdlib});
  CheckBody(*expr.body, SchemaOf(kind), std::string(ast::KeywordOf(kind)));
  return id;
}

// Reports unknown and repeated fields of one body, and recurses into nested
// records; values are checked later, when evaluated.
void Analyzer::CheckBody(const ast::Body& body, const RecordSchema& schema, const std::string& where) {
  FirstOfName first_of_name(body);
  for (const ast::Field& field : body.fields) {
    if (const ast::Field* first = first_of_name.Find(field); first != &field) {
      diags_.Report(diag::DiagId::DuplicateField, field.name.range, field.name.text)
          .Note(first->name.range, "first set here");
      continue;
    }
    const FieldSchema* f = schema.Find(field.name.text);
    if (!f) {
      auto b = diags_.Report(diag::DiagId::UnknownField, field.name.range, field.name.text, diag::Quote(where));
      std::vector<std::string> names = schema.FieldNames();
      if (std::string near = diag::ClosestMatch(field.name.text, names); !near.empty()) {
        b.Suggest(field.name.range, near);
      } else {
        b.Note(fmt::format("`{}` has the fields {}", where, fmt::join(names, ", ")));
      }
      continue;
    }
    if (f->type != FieldType::Record) {
      if (field.record)
        diags_.Report(diag::DiagId::ValueExpected, field.name.range, field.name.text)
            .Help(fmt::format("write `{} = VALUE`", field.name.text));
      continue;
    }
    const ast::Body* inner = field.record.get();
    if (auto* r = llvm::dyn_cast_or_null<ast::RecordExpr>(field.value)) {
      if (r->type.text != f->record->name) {
        diags_
            .Report(diag::DiagId::UnknownRecordType, r->type.range, field.name.text, diag::Quote(f->record->name),
                    r->type.text)
            .Fix(r->type.range, std::string(f->record->name));
      }
      inner = r->body.get();
    } else if (field.value) {
      diags_.Report(diag::DiagId::RecordExpected, field.value->range(), field.name.text)
          .Help(fmt::format("write `{} {{ ... }}`", field.name.text));
    }
    if (inner) CheckBody(*inner, *f->record, fmt::format("{}.{}", where, field.name.text));
  }
}

void UseOneMallocArena() {
#ifdef __GLIBC__
  mallopt(M_ARENA_MAX, 1);
#endif
}

auto Analyze(const imports::ModuleSet& modules, diag::DiagnosticEngine& diags) -> Program {
  // Evaluation recurses through references (`a.x = b.x`, `b.x = c.x`, ...)
  // up to kMaxEvalDepth levels: with sanitizers more than the default 8 MiB
  // stack holds. The thread only reserves the address space.
  constexpr unsigned kStackBytes = 256u << 20;
  Program program;
  llvm::thread worker(llvm::Optional<unsigned>(kStackBytes), [&] { program = Analyzer(modules, diags).Run(); });
  worker.join();
  return program;
}

}  // namespace avf::sema
