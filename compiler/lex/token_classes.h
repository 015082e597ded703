// Groups of token kinds, shared by the lexer's scan and layout passes.
#pragma once

#include "lex/tokenized_buffer.h"

namespace avf::lex {

// Tokens after which a newline never ends a field: the value continues.
inline auto ContinuesOnNextLine(TokenKind kind) -> bool {
  switch (kind) {
    case TokenKind::LBrace:
    case TokenKind::LBracket:
    case TokenKind::LParen:
    case TokenKind::Assign:
    case TokenKind::Colon:
    case TokenKind::Comma:
    case TokenKind::Dot:
    case TokenKind::Plus:
    case TokenKind::Minus:
    case TokenKind::Star:
    case TokenKind::Slash:
    case TokenKind::Newline:
    case TokenKind::Semi: return true;
    default: return false;
  }
}

inline auto IsOpener(TokenKind k) -> bool {
  return k == TokenKind::LBrace || k == TokenKind::LBracket || k == TokenKind::LParen;
}
inline auto IsCloser(TokenKind k) -> bool {
  return k == TokenKind::RBrace || k == TokenKind::RBracket || k == TokenKind::RParen;
}
inline auto OpenerOf(TokenKind closer) -> TokenKind {
  switch (closer) {
    case TokenKind::RBrace: return TokenKind::LBrace;
    case TokenKind::RBracket: return TokenKind::LBracket;
    case TokenKind::RParen: return TokenKind::LParen;
    default: return TokenKind::EndOfFile;
  }
}
inline auto CloserOf(TokenKind opener) -> TokenKind {
  switch (opener) {
    case TokenKind::LBrace: return TokenKind::RBrace;
    case TokenKind::LBracket: return TokenKind::RBracket;
    default: return TokenKind::RParen;
  }
}
inline auto IsKindKeyword(TokenKind k) -> bool { return k >= TokenKind::KwGpu && k <= TokenKind::KwJob; }
inline auto IsAnyName(TokenKind k) -> bool { return k == TokenKind::Identifier || IsKindKeyword(k); }

}  // namespace avf::lex
