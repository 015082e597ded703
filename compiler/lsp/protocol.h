// The LSP values the server exchanges, as plain structs: the workspace
// (workspace.h) computes them, server.cpp turns them into JSON. Positions are
// in the negotiated encoding (UTF-16 code units unless the client offers
// UTF-8). Included by files compiled as C++17 (see CMakeLists.txt), so it
// stays within C++17.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace avf::lsp {

enum class Encoding { Utf16, Utf8 };

struct Position {
  int64_t line = 0;
  int64_t character = 0;
};

struct Range {
  Position start;
  Position end;
};

struct Location {
  std::string uri;
  Range range;
};

struct TextEdit {
  Range range;
  std::string new_text;
};

// A text change of didChange: the whole document when `range` is empty.
struct Change {
  std::optional<Range> range;
  std::string text;
};

struct RelatedInformation {
  Location location;
  std::string message;
};

// A diagnostic's fix-its, offered as one quick-fix code action.
struct Fix {
  std::string title;
  std::vector<std::pair<std::string, TextEdit>> edits;  // uri and edit
};

struct Diagnostic {
  Range range;
  int severity = 1;  // 1 error, 2 warning
  std::string code;  // E0402
  std::string message;
  std::vector<RelatedInformation> related;
  std::optional<Fix> fix;
};

// SymbolKind values of the protocol that the server uses.
enum class SymbolKind { Field = 8, Struct = 23 };

struct Symbol {
  std::string name;
  std::string detail;
  SymbolKind kind = SymbolKind::Struct;
  Range range;
  Range selection;
  std::vector<Symbol> children;
};

struct HoverText {
  std::string markdown;
  Range range;
};

// CompletionItemKind values of the protocol that the server uses.
enum class CompletionKind { Field = 5, Keyword = 14, EnumMember = 20, Reference = 18 };

struct CompletionItem {
  std::string label;
  CompletionKind kind = CompletionKind::Field;
  std::string detail;
  std::string documentation;
  std::string insert_text;
};

}  // namespace avf::lsp
