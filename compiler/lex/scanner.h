// The tokens of grammar/Avf.g4's lexer rules, scanned by hand: longest match,
// ties to the rule written first, whitespace and closed comments dropped. A
// character outside the language is a BadChar token of one code point; an
// unclosed `/*` is one UnterminatedComment token to the end of the buffer.
// test/unit/lex_scanner_test.cpp holds it equal to the ANTLR lexer generated
// from the grammar.
#pragma once

#include <array>

#include "lex/tokenized_buffer.h"

namespace avf::lex {

class Scanner {
 public:
  // A leading UTF-8 byte order mark (at most two: ANTLR's reading dropped a
  // second one too) is skipped.
  explicit Scanner(llvm::StringRef text);

  // The k-th token from here; nullptr past the end.
  auto Peek(size_t k = 0) -> const Token* {
    return k < ahead_count_ ? &ahead_[(ahead_first_ + k) % kLookahead] : Fill(k);
  }
  void Next();
  // Continues with the first token at or after byte `offset`.
  void SkipTo(uint32_t offset);

 private:
  // Scans up to the k-th token from here (k < kLookahead).
  auto Fill(size_t k) -> const Token*;
  // The next token from next_, or false at the end; hidden ones are skipped.
  auto Scan(Token& out) -> bool;
  auto Number(uint32_t begin) const -> uint32_t;
  auto Unit(uint32_t at) const -> uint32_t;
  auto Digits(uint32_t at) const -> uint32_t;
  auto String(uint32_t begin) const -> Token;
  auto At(uint32_t i) const -> char { return i < text_.size() ? text_[i] : '\0'; }

  llvm::StringRef text_;
  uint32_t next_ = 0;
  // Tokens scanned but not consumed, a ring from ahead_first_.
  static constexpr size_t kLookahead = 4;
  std::array<Token, kLookahead> ahead_{};
  size_t ahead_first_ = 0;
  size_t ahead_count_ = 0;
};

}  // namespace avf::lex
