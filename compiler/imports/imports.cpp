#include "imports/imports.h"

#include <map>
#include <set>

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include "lex/lex.h"
#include "parse/parse.h"

namespace avf::imports {

namespace {

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

auto Normalized(llvm::StringRef p) -> std::string {
  llvm::SmallString<256> out(p);
  path::remove_dots(out, /*remove_dot_dot=*/true);
  return std::string(out.str());
}

auto WithExtension(llvm::StringRef p) -> std::string {
  return path::extension(p) == ".avf" ? p.str() : (p + ".avf").str();
}

auto IsRelative(llvm::StringRef text) -> bool {
  return text.startswith("./") || text.startswith("../") || path::is_absolute(text);
}

auto IsBlank(char c) -> bool { return c == ' ' || c == '\t' || c == '\r'; }

// What removing an import takes away: the whole line when the import stands
// alone on it (a trailing `//` comment goes with it), else the statement.
auto WholeImport(llvm::StringRef text, const ast::Import& imp) -> llvm::SMRange {
  const char* begin = text.begin();
  const char* line_start = imp.statement.Start.getPointer();
  const char* line_end = imp.statement.End.getPointer();
  while (line_start > begin && IsBlank(line_start[-1])) --line_start;
  while (line_end < text.end() && IsBlank(*line_end)) ++line_end;
  if (llvm::StringRef(line_end, text.end() - line_end).startswith("//")) {
    while (line_end < text.end() && *line_end != '\n') ++line_end;
  }
  bool alone = (line_start == begin || line_start[-1] == '\n') && (line_end == text.end() || *line_end == '\n');
  if (!alone) return imp.statement;
  if (line_end < text.end()) ++line_end;  // the newline
  return {llvm::SMLoc::getFromPointer(line_start), llvm::SMLoc::getFromPointer(line_end)};
}

// Identity of a file, so that two spellings of one path load once.
auto Identity(const std::string& p) -> std::string {
  llvm::SmallString<256> real;
  if (fs::real_path(p, real)) return Normalized(p);
  return std::string(real.str());
}

class Loader {
 public:
  Loader(const SearchPaths& paths, source::SourceSet& sources, diag::DiagnosticEngine& diags)
      : paths_(paths), sources_(sources), diags_(diags) {}

  void LoadMain(const std::string& main_path) {
    auto id = sources_.LoadFile(main_path, diags_);
    if (!id) return;
    set_.main_loaded = true;
    Visit(main_path, Identity(main_path), *id, /*is_main=*/true, /*is_stdlib=*/false);
  }

  void LoadMainText(const std::string& main_path, std::string text) {
    keep_main_tokens_ = true;
    auto id = sources_.AddBuffer(main_path, std::move(text), diags_);
    if (!id) return;
    set_.main_loaded = true;
    Visit(main_path, Identity(main_path), *id, /*is_main=*/true, /*is_stdlib=*/false);
  }

  auto Take() -> ModuleSet {
    set_.paths = paths_;
    return std::move(set_);
  }

 private:
  // Parses one file, then its imports depth-first; `stack_` holds the files
  // being visited, for cycle detection.
  void Visit(const std::string& shown_path, const std::string& identity, unsigned buffer_id, bool is_main,
             bool is_stdlib) {
    loaded_.insert(identity);
    lex::TokenizedBuffer tokens = lex::Lex(sources_, buffer_id, diags_);
    ast::File file = parse::Parse(tokens, diags_);
    size_t index = set_.modules.size();
    set_.modules.push_back({shown_path, buffer_id, tokens.source(), std::move(file), is_main, is_stdlib, {}});
    if (is_main && keep_main_tokens_) set_.modules.back().tokens = std::move(tokens);
    stack_.push_back(identity);
    // A copy: visiting imports appends to set_.modules.
    std::vector<ast::Import> imports = set_.modules[index].ast.imports;
    std::map<std::string, llvm::SMRange> seen_here;
    for (const ast::Import& imp : imports) {
      if (diags_.limit_reached()) break;
      Import(imp, shown_path, buffer_id, is_stdlib, seen_here);
    }
    stack_.pop_back();
    set_.dependency_order.push_back(index);
  }

  void Import(const ast::Import& imp, const std::string& importer, unsigned importer_buffer, bool importer_is_stdlib,
              std::map<std::string, llvm::SMRange>& seen_here) {
    if (imp.path.empty()) {
      diags_.Report(diag::DiagId::EmptyImportPath, imp.range).Help("write `import \"std/hardware\"`");
      return;
    }
    std::vector<std::string> candidates = Candidates(imp.path, importer, paths_);
    auto found = std::find_if(candidates.begin(), candidates.end(), [](const std::string& c) { return fs::exists(c); });
    if (found == candidates.end()) {
      ReportNotFound(imp, candidates);
      return;
    }
    std::string identity = Identity(*found);
    if (auto [it, fresh] = seen_here.emplace(identity, imp.range); !fresh) {
      diags_.Report(diag::DiagId::DuplicateImport, imp.range, imp.path)
          .Note(it->second, "first imported here")
          .Fix(WholeImport(sources_.Text(importer_buffer), imp), "");
      return;
    }
    if (auto cycle = std::find(stack_.begin(), stack_.end(), identity); cycle != stack_.end()) {
      ReportCycle(imp, cycle);
      return;
    }
    if (loaded_.count(identity)) return;
    auto id = sources_.LoadFile(*found, diags_, imp.range);
    if (!id) return;
    // Candidates lists the -I folders' files first, then the stdlib's.
    bool from_stdlib_dir =
        !IsRelative(imp.path) && static_cast<size_t>(found - candidates.begin()) >= paths_.include_dirs.size();
    Visit(*found, identity, *id, /*is_main=*/false, IsRelative(imp.path) ? importer_is_stdlib : from_stdlib_dir);
  }

  void ReportNotFound(const ast::Import& imp, const std::vector<std::string>& candidates) {
    auto b = diags_.Report(diag::DiagId::ImportNotFound, imp.range, imp.path);
    for (const std::string& c : candidates) b.Note(fmt::format("looked for `{}`", c));
    if (candidates.empty() || (!IsRelative(imp.path) && !llvm::StringRef(imp.path).startswith("std/"))) {
      b.Help("use `std/NAME` for the standard library, `./file.avf` for a file beside this one, or add `-I DIR`");
    }
  }

  void ReportCycle(const ast::Import& imp, std::vector<std::string>::iterator cycle_start) {
    std::string chain;
    for (auto it = cycle_start; it != stack_.end(); ++it) {
      chain += path::filename(*it).str() + " -> ";
    }
    chain += path::filename(*cycle_start).str();
    diags_.Report(diag::DiagId::ImportCycle, imp.range, chain)
        .Help("move the shared declarations into a file that both import");
  }

  const SearchPaths& paths_;
  source::SourceSet& sources_;
  diag::DiagnosticEngine& diags_;
  ModuleSet set_;
  bool keep_main_tokens_ = false;
  std::set<std::string> loaded_;
  std::vector<std::string> stack_;
};

}  // namespace

auto Candidates(const std::string& text, const std::string& importer, const SearchPaths& paths)
    -> std::vector<std::string> {
  std::string file = WithExtension(text);
  if (IsRelative(text)) {
    if (path::is_absolute(text)) return {Normalized(file)};
    llvm::SmallString<256> joined(path::parent_path(importer));
    path::append(joined, file);
    return {Normalized(joined)};
  }
  std::vector<std::string> out;
  for (const std::string& dir : paths.include_dirs) {
    llvm::SmallString<256> joined(dir);
    path::append(joined, file);
    out.push_back(Normalized(joined));
  }
  llvm::StringRef rest(file);
  if (rest.consume_front("std/")) {
    for (const std::string& dir : paths.stdlib_dirs) {
      llvm::SmallString<256> joined(dir);
      path::append(joined, rest);
      out.push_back(Normalized(joined));
    }
  }
  return out;
}

namespace {

// NAME of every DIR/NAME.avf of the folders `std/NAME` is looked for in.
auto StdModuleNames(const SearchPaths& paths) -> std::set<std::string> {
  std::vector<std::string> dirs = paths.stdlib_dirs;
  for (const std::string& dir : paths.include_dirs) {
    llvm::SmallString<256> joined(dir);
    path::append(joined, "std");
    dirs.push_back(std::string(joined.str()));
  }
  std::set<std::string> names;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (path::extension(it->path()) == ".avf") names.insert(path::stem(it->path()).str());
    }
  }
  return names;
}

}  // namespace

auto StdExports(const SearchPaths& paths) -> std::map<std::string, std::string> {
  std::map<std::string, std::string> exports;
  for (const std::string& name : StdModuleNames(paths)) {
    std::string module = "std/" + name;
    std::vector<std::string> candidates = Candidates(module, "", paths);
    auto found = std::find_if(candidates.begin(), candidates.end(), [](const std::string& c) { return fs::exists(c); });
    if (found == candidates.end()) continue;
    source::SourceSet sources;
    diag::DiagnosticEngine ignored;
    std::optional<unsigned> id = sources.LoadFile(*found, ignored);
    if (!id) continue;
    ast::File file = parse::Parse(lex::Lex(sources, *id, ignored), ignored);
    for (const ast::Decl& d : file.decls) exports.emplace(d.name.text, module);
  }
  return exports;
}

auto DefaultStdlibDirs(const std::string& exe_path) -> std::vector<std::string> {
  llvm::SmallString<256> prefix(path::parent_path(path::parent_path(exe_path)));
  path::append(prefix, "share", "aviflowc", "stdlib");
  return {Normalized(prefix)};
}

auto LoadModules(const std::string& main_path, const SearchPaths& paths, source::SourceSet& sources,
                 diag::DiagnosticEngine& diags) -> ModuleSet {
  Loader loader(paths, sources, diags);
  loader.LoadMain(main_path);
  return loader.Take();
}

auto LoadModulesFromText(const std::string& main_path, std::string main_text, const SearchPaths& paths,
                         source::SourceSet& sources, diag::DiagnosticEngine& diags) -> ModuleSet {
  Loader loader(paths, sources, diags);
  loader.LoadMainText(main_path, std::move(main_text));
  return loader.Take();
}

}  // namespace avf::imports
