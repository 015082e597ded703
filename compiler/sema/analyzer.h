// Internal to sema: the state shared by declaration collection (sema.cpp),
// expression evaluation (eval.cpp) and the cross-field rules (rules.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "diag/diagnostic.h"
#include "imports/imports.h"
#include "sema/value.h"

namespace avf::sema {

// A declaration being analyzed. Inline instances have no ast::Decl.
struct DeclState {
  const ast::Body* body = nullptr;
  ast::DeclKind kind{};
  std::string name;
  llvm::SMRange name_range;
  std::optional<ast::Name> base_name;
  std::optional<DeclId> base;
  unsigned buffer_id = 0;
  bool is_inline = false;
  bool is_main = false;
  // The base is unknown, of another kind, or part of a cycle: fields it
  // would have given are not reported missing (that error says it all).
  bool base_broken = false;
};

// How many field evaluations may be nested (`a = b.x`, `b.x = c.x`, ...).
// Each level takes a few KiB of stack; Analyze runs on a stack sized for it.
inline constexpr unsigned kMaxEvalDepth = 1000;

// A dotted field path inside a declaration: {"parallel", "tensor"}.
using FieldPath = std::vector<std::string>;
auto JoinPath(const FieldPath& path) -> std::string;

class Analyzer {
 public:
  Analyzer(const imports::ModuleSet& modules, diag::DiagnosticEngine& diags);
  auto Run() -> Program;

  // Evaluates one field of a declaration, following inheritance and
  // defaults; nullopt when the field is neither written nor defaulted.
  // `use` locates the reference that asked, for cycle errors.
  auto EvalField(DeclId decl, const FieldPath& path, llvm::SMRange use) -> std::optional<FieldValue>;
  auto Lookup(std::string_view name) const -> std::optional<DeclId>;
  // Names of declarations of `kind` (all kinds if nullopt), for "did you mean".
  auto NamesOfKind(std::optional<ast::DeclKind> kind) const -> std::vector<std::string>;
  // `base { overrides }` written in `owner.path`: a new declaration.
  auto AddInline(const ast::RecordExpr& expr, DeclId base, DeclId owner, const FieldPath& path) -> DeclId;
  auto decl(DeclId id) const -> const DeclState& { return decls_[id]; }
  auto program() const -> const Program& { return program_; }
  auto diags() -> diag::DiagnosticEngine& { return diags_; }
  void CheckBody(const ast::Body& body, const RecordSchema& schema, const std::string& where);
  // An unknown `name` that a stdlib module declares: help and a fix-it that
  // adds its import to the file of `buffer_id` (std_import.cpp). False when
  // no stdlib module declares it.
  auto SuggestStdImport(diag::DiagnosticBuilder& b, const std::string& name, unsigned buffer_id) -> bool;

 private:
  enum class EvalState : uint8_t { InProgress, Done };
  struct Memo {
    EvalState state;
    std::optional<FieldValue> value;
  };
  struct Site {
    const ast::Field* field;
    DeclId decl;
  };

  void Collect();
  void ResolveBases();
  void BreakBaseCycles();
  void MarkBrokenChains();
  void ReportBaseCycle(const std::vector<DeclId>& cycle);
  // `key` is JoinPath(path).
  auto FindSite(DeclId decl, const FieldPath& path, const std::string& key) -> std::optional<Site>;
  auto FindSiteIn(DeclId decl, const FieldPath& path) const -> const ast::Field*;
  auto SchemaAt(ast::DeclKind kind, const FieldPath& path) const -> const FieldSchema*;
  auto Compute(DeclId decl, const FieldPath& path, const std::string& joined, const FieldSchema& schema)
      -> std::optional<FieldValue>;
  auto ComputeWritten(DeclId decl, const FieldPath& path, const FieldSchema& schema, const Site& site)
      -> std::optional<FieldValue>;
  auto BuildRecord(DeclId decl, const FieldPath& prefix, const RecordSchema& schema, llvm::SMRange where)
      -> RecordValue;
  auto DefaultFor(DeclId decl, const FieldPath& path, const FieldSchema& schema) -> std::optional<FieldValue>;
  void ReportMissing(DeclId decl, const FieldPath& path, llvm::SMRange where);
  auto InheritsFromBrokenBase(DeclId decl) const -> bool;

  const imports::ModuleSet& modules_;
  diag::DiagnosticEngine& diags_;
  std::vector<DeclState> decls_;
  std::map<std::string, DeclId, std::less<>> by_name_;
  // Keyed by a declaration and a JoinPath: hashed, since every field of
  // every declaration passes through both maps.
  struct FieldKeyHash {
    auto operator()(const std::pair<DeclId, std::string>& key) const -> size_t {
      return std::hash<std::string>()(key.second) * 31 + key.first;
    }
  };
  std::unordered_map<std::pair<DeclId, std::string>, Memo, FieldKeyHash> memo_;
  // FindSite results, so that long inheritance chains are walked once.
  std::unordered_map<std::pair<DeclId, std::string>, std::optional<Site>, FieldKeyHash> sites_;
  // Per declaration (inline ones excepted): InheritsFromBrokenBase.
  std::vector<bool> broken_chain_;
  // Nested EvalField calls, bounded so that absurdly long reference chains
  // are an error rather than a stack overflow.
  unsigned eval_depth_ = 0;
  Program program_;
  // StdExports of the search path, read at the first unknown name.
  std::optional<std::map<std::string, std::string>> std_exports_;
};

// Evaluates `expr` as the value of a field with schema `field`, reporting
// type, unit and reference errors (eval.cpp).
auto EvaluateField(Analyzer& analyzer, const ast::Expr& expr, const FieldSchema& field, DeclId owner,
                   const FieldPath& path) -> Value;

// Rules that relate several fields of one declaration (rules.cpp).
void CheckRules(Analyzer& analyzer, const Program& program);

}  // namespace avf::sema
