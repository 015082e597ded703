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

// ANTLR numbers the tokens it is given from 0; a parse that starts at our
// token `first` (parse.cpp parses only the part of a file that failed) has
// its token i at our index first + i. A token ANTLR conjured while
// recovering has no index and maps to the end of the file.
inline auto OurIndex(const lex::TokenizedBuffer& tokens, size_t first, const antlr4::Token* t) -> size_t {
  size_t index = t->getTokenIndex();
  size_t last = tokens.tokens().size() - 1;
  return index == INVALID_INDEX ? last : std::min(first + index, last);
}

inline auto OurToken(const lex::TokenizedBuffer& tokens, size_t first, const antlr4::Token* t) -> const lex::Token& {
  return tokens.tokens()[OurIndex(tokens, first, t)];
}

// IntervalSet::contains is overloaded for size_t and ssize_t.
inline auto Has(const antlr4::misc::IntervalSet& set, size_t type) -> bool { return set.contains(type); }

}  // namespace avf::parse
