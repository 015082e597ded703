// The lexer's output: the tokens of one source buffer as byte ranges, with
// the newlines that cannot end a field already removed and an empty closer
// (begin == end) inserted where a bracket was left open (see lex.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>

namespace avf::lex {

enum class TokenKind : uint8_t {
#define TOKEN(Name, AntlrType, Spelling) Name,
#include "lex/token_kinds.def"
#undef TOKEN
};

auto Spelling(TokenKind kind) -> std::string_view;
auto KindName(TokenKind kind) -> std::string_view;

struct Token {
  TokenKind kind;
  uint32_t begin;  // byte offset in the buffer
  uint32_t end;    // one past the last byte
};

class TokenizedBuffer {
 public:
  TokenizedBuffer(unsigned buffer_id, llvm::StringRef text) : buffer_id_(buffer_id), text_(text) {}

  auto buffer_id() const -> unsigned { return buffer_id_; }
  auto source() const -> llvm::StringRef { return text_; }
  auto tokens() const -> const std::vector<Token>& { return tokens_; }
  auto Text(const Token& t) const -> llvm::StringRef { return text_.substr(t.begin, t.end - t.begin); }
  auto Loc(uint32_t offset) const -> llvm::SMLoc { return llvm::SMLoc::getFromPointer(text_.data() + offset); }
  auto Range(const Token& t) const -> llvm::SMRange { return {Loc(t.begin), Loc(t.end)}; }
  // An empty closer the lexer inserted where a bracket was left open.
  static auto IsInserted(const Token& t) -> bool {
    return t.begin == t.end &&
           (t.kind == TokenKind::RBrace || t.kind == TokenKind::RBracket || t.kind == TokenKind::RParen);
  }
  // False when lexing found a problem that makes parsing pointless
  // (nesting beyond the limit): the parser then skips this buffer.
  auto parseable() const -> bool { return parseable_; }
  auto has_errors() const -> bool { return has_errors_; }

 private:
  friend class Lexer;
  friend class Layout;
  unsigned buffer_id_;
  llvm::StringRef text_;
  std::vector<Token> tokens_;
  bool parseable_ = true;
  bool has_errors_ = false;
};

}  // namespace avf::lex
