// Internal to sema: the state shared by declaration collection (sema.cpp),
// expression evaluation (eval.cpp) and the cross-field rules (rules.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <llvm/ADT/PointerIntPair.h>
#include <llvm/ADT/StringMap.h>

#include "diag/diagnostic.h"
#include "imports/imports.h"
#include "sema/paths.h"
#include "sema/value.h"

namespace avf::sema {

// What analysis needs of a declaration beyond its Program::decls entry
// (kind, name, base, ...). Inline instances have no ast::Decl.
struct DeclState {
  const ast::Body* body = nullptr;
  const ast::Name* base_name = nullptr;  // as written; null: none, or inline
  // The base is unknown, of another kind, or part of a cycle: fields it
  // would have given are not reported missing (that error says it all).
  bool base_broken = false;
};

// How many field evaluations may be nested (`a = b.x`, `b.x = c.x`, ...).
// Each level takes a few KiB of stack; Analyze runs on a stack sized for it.
inline constexpr unsigned kMaxEvalDepth = 1000;

class Analyzer {
 public:
  Analyzer(const imports::ModuleSet& modules, diag::DiagnosticEngine& diags);
  auto Run() -> Program;

  // Evaluates one field of a declaration, following inheritance and
  // defaults; nullopt when the field is neither written nor defaulted.
  // `use` locates the reference that asked, for cycle errors.
  auto EvalField(DeclId decl, PathId path, llvm::SMRange use) -> std::optional<FieldValue>;
  auto Lookup(std::string_view name) const -> std::optional<DeclId>;
  // Names of declarations of `kind` (all kinds if nullopt), for "did you mean".
  auto NamesOfKind(std::optional<ast::DeclKind> kind) const -> std::vector<std::string>;
  // `base { overrides }` written in `owner.path`: a new declaration.
  auto AddInline(const ast::RecordExpr& expr, DeclId base, DeclId owner, std::string_view path) -> DeclId;
  auto decl(DeclId id) const -> const Decl& { return program_.decls[id]; }
  auto program() const -> const Program& { return program_; }
  auto diags() -> diag::DiagnosticEngine& { return diags_; }
  void CheckBody(const ast::Body& body, const RecordSchema& schema, const std::string& where);
  // An unknown `name` that a stdlib module declares: help and a fix-it that
  // adds its import to the file of `buffer_id` (std_import.cpp). False when
  // no stdlib module declares it.
  auto SuggestStdImport(diag::DiagnosticBuilder& b, const std::string& name, unsigned buffer_id) -> bool;

 private:
  // Where the evaluation of one field of one declaration stands. A value
  // computed before the record holding it is built waits in `pending_`; it
  // is then moved into the record (Placed), so that it is stored once.
  enum class SlotState : uint8_t { Unvisited, InProgress, Pending, Placed, Absent };
  struct Site {
    const ast::Field* field;
    DeclId decl;
  };
  // A record's values gathered before it is built with exactly their number.
  struct Scratch {
    std::vector<FieldValue> gathered;
    std::vector<std::pair<size_t, uint32_t>> placed;  // index in gathered, slot
  };

  void Reserve();
  void Collect();
  void AddDecl(DeclState state, Decl decl);
  void ResolveBases();
  void BreakBaseCycles();
  void MarkBrokenChains();
  void ReportBaseCycle(const std::vector<DeclId>& cycle);
  auto SlotIndex(DeclId decl, PathId path) const -> uint32_t { return slot_base_[decl] + path; }
  auto Paths(DeclId decl) const -> const SchemaPaths& { return *decl_paths_[decl]; }
  // Evaluates an unvisited field under the cycle and depth guards.
  auto Evaluate(DeclId decl, PathId path, llvm::SMRange use) -> std::optional<FieldValue>;
  auto ReportCycle(DeclId decl, PathId path, llvm::SMRange use) -> FieldValue;
  // The field's value, evaluated once. `take`: for the record being built,
  // which then holds it (a pending value is moved out); otherwise a copy, and
  // a value computed now waits in pending_ for its record.
  auto Obtain(DeclId decl, PathId path, llvm::SMRange use, bool take) -> std::optional<FieldValue>;
  auto FindSite(DeclId decl, PathId path) -> std::optional<Site>;
  auto FindSiteIn(DeclId decl, PathId path) const -> const ast::Field*;
  auto Compute(DeclId decl, PathId path) -> std::optional<FieldValue>;
  auto ComputeRecord(DeclId decl, PathId path, const std::optional<Site>& site) -> std::optional<FieldValue>;
  auto ComputeWritten(DeclId decl, PathId path, const Site& site) -> std::optional<FieldValue>;
  auto BuildRecord(DeclId decl, PathId prefix, llvm::SMRange where) -> RecordValue;
  auto DefaultFor(DeclId decl, PathId path) -> std::optional<FieldValue>;
  void ReportMissing(DeclId decl, PathId path, llvm::SMRange where);
  auto InheritsFromBrokenBase(DeclId decl) const -> bool;

  const imports::ModuleSet& modules_;
  diag::DiagnosticEngine& diags_;
  std::vector<DeclState> decls_;
  llvm::StringMap<DeclId> by_name_;
  // One slot per declaration and path of its kind's schema, from slot_base_:
  // its value where Pending or Placed, with its state in the pointer's low
  // bits (8 bytes a slot: a large program has millions).
  std::vector<uint32_t> slot_base_;
  std::vector<const SchemaPaths*> decl_paths_;  // PathsOf each declaration's kind
  std::vector<llvm::PointerIntPair<const FieldValue*, 3, SlotState>> slots_;
  std::unordered_map<uint32_t, FieldValue> pending_;  // by slot index
  // FindSite results for bases, so that long inheritance chains are walked
  // once; by slot index.
  std::unordered_map<uint32_t, std::optional<Site>> base_sites_;
  std::vector<Scratch> scratch_pool_;
  // Per declaration (inline ones excepted): InheritsFromBrokenBase.
  std::vector<bool> broken_chain_;
  // Nested evaluations, bounded so that absurdly long reference chains
  // are an error rather than a stack overflow.
  unsigned eval_depth_ = 0;
  Program program_;
  // StdExports of the search path, read at the first unknown name.
  std::optional<std::map<std::string, std::string>> std_exports_;
};

// Evaluates `expr` as the value of a field with schema `field`, reporting
// type, unit and reference errors (eval.cpp).
// `path` is the field's joined path ("parallel.tensor").
auto EvaluateField(Analyzer& analyzer, const ast::Expr& expr, const FieldSchema& field, DeclId owner,
                   std::string_view path) -> Value;

// Rules that relate several fields of one declaration (rules.cpp).
void CheckRules(Analyzer& analyzer, const Program& program);

}  // namespace avf::sema
