// Phase 3: the file named on the command line -> every module it imports,
// each lexed and parsed. Import cycles and missing files are diagnosed here.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ast/ast.h"
#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"
#include "source/source_set.h"

namespace avf::imports {

struct SearchPaths {
  std::vector<std::string> include_dirs;  // -I, in command-line order
  std::vector<std::string> stdlib_dirs;   // where `std/NAME` resolves
};

struct Module {
  std::string path;  // as shown in diagnostics
  unsigned buffer_id = 0;
  llvm::StringRef text;  // the source, owned by the SourceSet
  ast::File ast;
  bool is_main = false;
  // Found by `import "std/NAME"` in a stdlib folder (not under a `-I` folder,
  // which comes first), or imported by a relative path from such a module:
  // the reference figures the project ships, not the user's own.
  bool is_stdlib = false;
  // Only the main module of LoadModulesFromText keeps its tokens (an editor
  // asks about them); elsewhere nothing reads them after parsing, and on a
  // large file they would be a seventh of the front end's memory.
  std::optional<lex::TokenizedBuffer> tokens;
};

// Modules in load order: the main file first, then imports depth-first.
struct ModuleSet {
  std::vector<Module> modules;
  // Indices into `modules`, each after every module it imports (an import
  // that closes a cycle is not followed): the order in which a reader meets
  // the declarations, imported ones first and the main file last. A set built
  // by hand may leave it empty; then `modules` order is used.
  std::vector<size_t> dependency_order;
  bool main_loaded = false;
  SearchPaths paths;  // where the imports were looked for
};

auto LoadModules(const std::string& main_path, const SearchPaths& paths, source::SourceSet& sources,
                 diag::DiagnosticEngine& diags) -> ModuleSet;

// The same with the main file's text given (an editor's unsaved buffer, for
// `aviflowc lsp`) instead of read from `main_path`; its imports are resolved
// from `main_path` and read from disk. The main module keeps its tokens.
auto LoadModulesFromText(const std::string& main_path, std::string main_text, const SearchPaths& paths,
                         source::SourceSet& sources, diag::DiagnosticEngine& diags) -> ModuleSet;

// Where `import "text"` in `importer` would be looked for, in order.
auto Candidates(const std::string& text, const std::string& importer, const SearchPaths& paths)
    -> std::vector<std::string>;

// The stdlib modules `import "std/NAME"` finds on `paths`, each with the
// names it declares: name -> "std/NAME" (the first module in name order that
// declares it). Each module is read and parsed apart, its problems ignored;
// for hints such as "add `import "std/models"`".
auto StdExports(const SearchPaths& paths) -> std::map<std::string, std::string>;

// The stdlib folders for an executable at `exe_path`: installed
// (<prefix>/share/aviflowc/stdlib beside <prefix>/bin) and in the build tree.
auto DefaultStdlibDirs(const std::string& exe_path) -> std::vector<std::string>;

}  // namespace avf::imports
