// The open documents and the language features on them, in protocol terms
// (protocol.h). A document is analysed (analysis.h) when a feature first
// needs it after a change, so that a burst of edits costs one analysis.
// Included by files compiled as C++17 (see CMakeLists.txt).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lsp/protocol.h"

namespace avf::lsp {

struct SearchDirs {
  std::vector<std::string> include_dirs;  // -I
  std::vector<std::string> stdlib_dirs;   // where `std/NAME` resolves
};

class Workspace {
 public:
  explicit Workspace(SearchDirs dirs);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  auto operator=(const Workspace&) -> Workspace& = delete;

  void set_encoding(Encoding encoding) { encoding_ = encoding; }
  auto encoding() const -> Encoding { return encoding_; }

  // `version` is the client's, sent back with the diagnostics.
  void Open(const std::string& uri, std::string text, std::optional<int64_t> version);
  // False (the document unchanged from the bad edit on) for an unknown
  // document or an edit whose range is not in it.
  auto Change(const std::string& uri, const std::vector<lsp::Change>& changes, std::optional<int64_t> version) -> bool;
  auto Version(const std::string& uri) const -> std::optional<int64_t>;
  void Close(const std::string& uri);
  auto IsOpen(const std::string& uri) const -> bool { return documents_.count(uri) > 0; }
  // Documents changed since their diagnostics were last taken.
  auto Unpublished() const -> std::vector<std::string>;

  auto Diagnostics(const std::string& uri) -> std::vector<lsp::Diagnostic>;
  auto Hover(const std::string& uri, Position p) -> std::optional<HoverText>;
  auto Definition(const std::string& uri, Position p) -> std::optional<Location>;
  auto Completion(const std::string& uri, Position p) -> std::vector<CompletionItem>;
  auto Symbols(const std::string& uri) -> std::vector<Symbol>;
  // The edits to the canonical layout; nullopt when the document does not
  // lex and parse (`aviflowc fmt` leaves such a file as it is).
  auto Format(const std::string& uri) -> std::optional<std::vector<TextEdit>>;
  // The document's diagnostics with fix-its on the lines of `range`.
  auto Fixes(const std::string& uri, Range range) -> std::vector<lsp::Diagnostic>;

 private:
  struct Document;
  auto Analysed(const std::string& uri) -> Document*;
  SearchDirs dirs_;
  Encoding encoding_ = Encoding::Utf16;
  std::map<std::string, std::unique_ptr<Document>> documents_;
};

}  // namespace avf::lsp
