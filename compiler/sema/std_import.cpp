// A name that only a stdlib module declares, used in a file that does not
// import that module: the import to add, where a reader expects it.
#include <fmt/format.h>

#include "sema/analyzer.h"

namespace avf::sema {

namespace {

// After the file's last import (at the start of the next line); else at the
// start of the line of its first declaration, followed by a blank line.
auto ImportInsertion(const imports::Module& module, const std::string& path) -> diag::FixIt {
  std::string line = fmt::format("import \"{}\"\n", path);
  llvm::StringRef text = module.text;
  auto at = [](const char* p) { return llvm::SMRange(llvm::SMLoc::getFromPointer(p), llvm::SMLoc::getFromPointer(p)); };
  if (!module.ast.imports.empty()) {
    const char* end = module.ast.imports.back().statement.End.getPointer();
    while (end < text.end() && *end != '\n') ++end;
    if (end == text.end()) return {at(end), "\n" + line};
    return {at(end + 1), line};
  }
  if (module.ast.decls.empty()) return {at(text.begin()), line};
  const char* start = module.ast.decls.front().range.Start.getPointer();
  while (start > text.begin() && start[-1] != '\n') --start;
  return {at(start), line + "\n"};
}

}  // namespace

auto Analyzer::SuggestStdImport(diag::DiagnosticBuilder& b, const std::string& name, unsigned buffer_id) -> bool {
  if (!std_exports_) std_exports_ = imports::StdExports(modules_.paths);
  auto it = std_exports_->find(name);
  if (it == std_exports_->end()) return false;
  const imports::Module* module = nullptr;
  for (const imports::Module& m : modules_.modules) {
    if (m.buffer_id == buffer_id) module = &m;
  }
  b.Help(fmt::format("`{}` is declared by the standard library's `{}`; add `import \"{}\"`", name, it->second,
                     it->second));
  if (!module) return true;
  diag::FixIt fix = ImportInsertion(*module, it->second);
  b.Fix(fix.range, fix.replacement);
  return true;
}

}  // namespace avf::sema
