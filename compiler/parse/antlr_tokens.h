// Maps between our token kinds and the token types of the generated ANTLR
// lexer; used only inside compiler/parse.
#pragma once

#include "AvfLexer.h"

#include "lex/tokenized_buffer.h"

namespace avf::parse {

inline auto AntlrType(lex::TokenKind kind) -> size_t {
  switch (kind) {
#define TOKEN(Name, AntlrType, Spelling) \
  case lex::TokenKind::Name:             \
    return antlrgen::AvfLexer::AntlrType;
#include "lex/token_kinds.def"
#undef TOKEN
  }
  return antlrgen::AvfLexer::BAD_CHAR;
}

inline auto KindOfAntlrType(size_t type) -> lex::TokenKind {
#define TOKEN(Name, AntlrType, Spelling) \
  if (type == static_cast<size_t>(antlrgen::AvfLexer::AntlrType)) return lex::TokenKind::Name;
#include "lex/token_kinds.def"
#undef TOKEN
  return lex::TokenKind::BadChar;
}

// Our token behind an ANTLR token: the parser's token index is the index
// into TokenizedBuffer::tokens(). A token ANTLR conjured while recovering has
// no index and maps to the end of the file.
inline auto OurToken(const lex::TokenizedBuffer& tokens, const antlr4::Token* t) -> const lex::Token& {
  size_t index = t->getTokenIndex();
  const auto& all = tokens.tokens();
  return index < all.size() ? all[index] : all.back();
}

// IntervalSet::contains is overloaded for size_t and ssize_t.
inline auto Has(const antlr4::misc::IntervalSet& set, size_t type) -> bool { return set.contains(type); }

}  // namespace avf::parse
