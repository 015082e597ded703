// One run of the front end on an open document, as `aviflowc check` runs it
// on a file: source -> lex -> parse -> imports -> sema -> check -> plan ->
// lower (for its diagnostics; nothing is written). The document's text comes
// from the editor; its imports from disk. Each later phase runs only when the
// earlier ones found no error, so a document with errors still has its
// tokens and (partial) syntax tree for hover and completion.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diag/diagnostic.h"
#include "imports/imports.h"
#include "plan/plan.h"
#include "sema/value.h"
#include "source/source_set.h"

namespace avf::lsp {

struct Analysis {
  std::unique_ptr<source::SourceSet> sources = std::make_unique<source::SourceSet>();
  diag::DiagnosticEngine diags;
  imports::ModuleSet modules;
  std::optional<sema::Program> program;
  std::vector<plan::Plan> plans;  // the document's jobs that could be planned

  // The document's module; null when its text was refused (NUL byte).
  auto main() const -> const imports::Module* {
    return modules.main_loaded && !modules.modules.empty() ? &modules.modules.front() : nullptr;
  }
  // The declaration named `name` in the document or its imports, the
  // document's first; with the module that holds it.
  auto FindDecl(std::string_view name) const -> std::pair<const ast::Decl*, const imports::Module*>;
  // The document's `import` statement that brought in the module of
  // `buffer_id`, directly or through other imports; invalid when none did.
  auto ImportLeadingTo(unsigned buffer_id, const imports::SearchPaths& paths) const -> llvm::SMRange;
};

auto Analyze(const std::string& path, std::string text, const imports::SearchPaths& paths) -> std::unique_ptr<Analysis>;

}  // namespace avf::lsp
