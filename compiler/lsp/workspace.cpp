#include "lsp/workspace.h"

#include <fmt/format.h>

#include "diag/render.h"
#include "format/format.h"
#include "lex/lex.h"
#include "lsp/analysis.h"
#include "lsp/features.h"
#include "lsp/locator.h"
#include "lsp/uri.h"
#include "parse/parse.h"

namespace avf::lsp {

struct Workspace::Document {
  std::string text;
  std::optional<int64_t> version;
  std::unique_ptr<Analysis> analysis;  // null after a change
  bool published = false;
};

namespace {

auto SearchPathsOf(const SearchDirs& dirs) -> imports::SearchPaths {
  imports::SearchPaths paths;
  paths.include_dirs = dirs.include_dirs;
  paths.stdlib_dirs = dirs.stdlib_dirs;
  return paths;
}

// By lines: a cursor anywhere on a diagnostic's line gets its fix, as
// editors ask for the actions at the cursor.
auto SharesLine(const Range& a, const Range& b) -> bool {
  return a.start.line <= b.end.line && b.start.line <= a.end.line;
}

// The range a diagnostic underlines: its first range when that holds its
// location, else its location.
auto PrimaryRange(const diag::Diagnostic& d) -> llvm::SMRange {
  for (const llvm::SMRange& r : d.ranges) {
    if (r.Start.getPointer() <= d.loc.getPointer() && d.loc.getPointer() <= r.End.getPointer()) return r;
  }
  return {d.loc, d.loc};
}

auto FixOf(const diag::Diagnostic& d, Locator& locator) -> std::optional<Fix> {
  if (d.fixits.empty()) return std::nullopt;
  Fix fix;
  fix.title = d.help.empty() ? fmt::format("apply the fix-it of {}", diag::Info(d.id).code) : d.help.front();
  for (const diag::FixIt& f : d.fixits) {
    std::optional<Location> at = locator.LocationOf(f.range);
    if (!at) return std::nullopt;
    fix.edits.push_back({at->uri, TextEdit{at->range, f.replacement}});
  }
  return fix;
}

// A diagnostic as the command line shows it: the message, notes without a
// place and help lines under it, notes with a place as related information.
// One in an imported file is shown on the import that leads to it.
auto Convert(const diag::Diagnostic& d, const Analysis& a, const imports::SearchPaths& paths, Locator& locator)
    -> lsp::Diagnostic {
  lsp::Diagnostic out;
  out.severity = d.severity == diag::Severity::Warning ? 2 : 1;
  out.code = std::string(diag::Info(d.id).code);
  out.message = d.message;
  std::optional<Location> at = locator.LocationOf(PrimaryRange(d));
  if (at && at->uri != locator.main_uri()) {
    out.message = fmt::format("{} (in {} line {})", out.message, at->uri, at->range.start.line + 1);
    out.related.push_back({*at, d.message});
    unsigned buffer = a.sources->mgr().FindBufferContainingLoc(d.loc);
    if (std::optional<Location> import = locator.LocationOf(a.ImportLeadingTo(buffer, paths)))
      out.range = import->range;
  }
  if (at && at->uri == locator.main_uri()) out.range = at->range;
  for (const diag::SubDiagnostic& n : d.notes) {
    std::optional<Location> place = locator.LocationOf(n.range.isValid() ? n.range : llvm::SMRange(n.loc, n.loc));
    if (place) out.related.push_back({*place, n.message});
    else out.message += "\nnote: " + n.message;
  }
  for (const std::string& h : d.help) out.message += "\nhelp: " + h;
  out.fix = FixOf(d, locator);
  return out;
}

auto FieldSymbols(const ast::Body& body, Locator& locator) -> std::vector<Symbol>;

auto FieldSymbol(const ast::Field& f, Locator& locator) -> std::optional<Symbol> {
  std::optional<Location> range = locator.LocationOf(f.range());
  std::optional<Location> name = locator.LocationOf(f.name.range);
  if (!range || !name || f.name.text.empty()) return std::nullopt;
  Symbol s{std::string(f.name.text), "", SymbolKind::Field, range->range, name->range, {}};
  if (f.record) s.children = FieldSymbols(*f.record, locator);
  return s;
}

auto FieldSymbols(const ast::Body& body, Locator& locator) -> std::vector<Symbol> {
  std::vector<Symbol> out;
  for (const ast::Field& f : body.fields) {
    if (auto s = FieldSymbol(f, locator)) out.push_back(std::move(*s));
  }
  return out;
}

auto DeclSymbol(const ast::Decl& d, Locator& locator) -> std::optional<Symbol> {
  std::optional<Location> range = locator.LocationOf(d.range);
  std::optional<Location> name = locator.LocationOf(d.name.range);
  if (!range || !name || d.name.text.empty()) return std::nullopt;
  std::string detail(d.keyword.text);
  if (d.base) detail += fmt::format(" : {}", d.base->text);
  Symbol s{std::string(d.name.text), detail, SymbolKind::Struct, range->range, name->range, {}};
  s.children = FieldSymbols(d.body, locator);
  return s;
}

}  // namespace

Workspace::Workspace(SearchDirs dirs) : dirs_(std::move(dirs)) {}
Workspace::~Workspace() = default;

void Workspace::Open(const std::string& uri, std::string text, std::optional<int64_t> version) {
  auto document = std::make_unique<Document>();
  document->text = std::move(text);
  document->version = version;
  documents_[uri] = std::move(document);
}

auto Workspace::Change(const std::string& uri, const std::vector<lsp::Change>& changes, std::optional<int64_t> version)
    -> bool {
  auto it = documents_.find(uri);
  if (it == documents_.end()) return false;
  Document& d = *it->second;
  d.version = version;
  d.analysis.reset();
  d.published = false;
  for (const lsp::Change& c : changes) {
    if (!ApplyChange(d.text, c, encoding_)) return false;
  }
  return true;
}

auto Workspace::Version(const std::string& uri) const -> std::optional<int64_t> {
  auto it = documents_.find(uri);
  return it == documents_.end() ? std::nullopt : it->second->version;
}

void Workspace::Close(const std::string& uri) { documents_.erase(uri); }

auto Workspace::Unpublished() const -> std::vector<std::string> {
  std::vector<std::string> out;
  for (const auto& [uri, d] : documents_) {
    if (!d->published) out.push_back(uri);
  }
  return out;
}

auto Workspace::Analysed(const std::string& uri) -> Document* {
  auto it = documents_.find(uri);
  if (it == documents_.end()) return nullptr;
  Document& d = *it->second;
  if (!d.analysis) d.analysis = Analyze(PathFromUri(uri), d.text, SearchPathsOf(dirs_));
  return &d;
}

auto Workspace::Diagnostics(const std::string& uri) -> std::vector<lsp::Diagnostic> {
  Document* d = Analysed(uri);
  if (!d) return {};
  d->published = true;
  Locator locator(*d->analysis, uri, encoding_);
  std::vector<lsp::Diagnostic> out;
  for (const diag::Diagnostic* diagnostic : diag::SortedForOutput(d->analysis->sources->mgr(), d->analysis->diags)) {
    out.push_back(Convert(*diagnostic, *d->analysis, SearchPathsOf(dirs_), locator));
  }
  return out;
}

auto Workspace::Fixes(const std::string& uri, Range range) -> std::vector<lsp::Diagnostic> {
  std::vector<lsp::Diagnostic> out = Diagnostics(uri);
  std::erase_if(out, [&](const lsp::Diagnostic& d) { return !d.fix || !SharesLine(d.range, range); });
  return out;
}

auto Workspace::Hover(const std::string& uri, Position p) -> std::optional<HoverText> {
  Document* d = Analysed(uri);
  if (!d) return std::nullopt;
  std::optional<size_t> offset = LineIndex(d->text).Offset(p, encoding_);
  if (!offset) return std::nullopt;
  std::optional<HoverResult> hover = HoverAt(*d->analysis, *offset);
  if (!hover) return std::nullopt;
  Locator locator(*d->analysis, uri, encoding_);
  std::optional<Location> at = locator.LocationOf(hover->range);
  return HoverText{hover->markdown, at ? at->range : Range{p, p}};
}

auto Workspace::Definition(const std::string& uri, Position p) -> std::optional<Location> {
  Document* d = Analysed(uri);
  if (!d) return std::nullopt;
  std::optional<size_t> offset = LineIndex(d->text).Offset(p, encoding_);
  if (!offset) return std::nullopt;
  std::optional<Target> target = DefinitionAt(*d->analysis, *offset, SearchPathsOf(dirs_));
  if (!target) return std::nullopt;
  if (!target->range.isValid()) return Location{UriFromPath(target->path), {}};
  Locator locator(*d->analysis, uri, encoding_);
  return locator.LocationOf(target->range);
}

auto Workspace::Completion(const std::string& uri, Position p) -> std::vector<CompletionItem> {
  Document* d = Analysed(uri);
  if (!d) return {};
  std::optional<size_t> offset = LineIndex(d->text).Offset(p, encoding_);
  if (!offset) return {};
  return CompletionsAt(*d->analysis, *offset);
}

auto Workspace::Symbols(const std::string& uri) -> std::vector<Symbol> {
  Document* d = Analysed(uri);
  if (!d || !d->analysis->main()) return {};
  Locator locator(*d->analysis, uri, encoding_);
  std::vector<Symbol> out;
  for (const ast::Decl& decl : d->analysis->main()->ast.decls) {
    if (auto s = DeclSymbol(decl, locator)) out.push_back(std::move(*s));
  }
  return out;
}

auto Workspace::Format(const std::string& uri) -> std::optional<std::vector<TextEdit>> {
  auto it = documents_.find(uri);
  if (it == documents_.end()) return std::nullopt;
  const std::string& text = it->second->text;
  source::SourceSet sources;
  diag::DiagnosticEngine diags;
  std::optional<unsigned> id = sources.AddBuffer(PathFromUri(uri), text, diags);
  if (!id) return std::nullopt;
  lex::TokenizedBuffer tokens = lex::Lex(sources, *id, diags);
  if (diags.has_errors()) return std::nullopt;
  parse::Parse(tokens, diags);
  if (diags.has_errors()) return std::nullopt;
  std::string formatted = format::FormatFile(tokens);
  if (formatted == text) return std::vector<TextEdit>{};
  LineIndex index(text);
  return std::vector<TextEdit>{{{{0, 0}, index.PositionOf(text.size(), encoding_)}, formatted}};
}

}  // namespace avf::lsp
