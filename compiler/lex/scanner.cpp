#include "lex/scanner.h"

#include <algorithm>
#include <cassert>
#include <optional>

namespace avf::lex {

namespace {

constexpr llvm::StringLiteral kByteOrderMark = "\xEF\xBB\xBF";

auto IsDigit(char c) -> bool { return c >= '0' && c <= '9'; }
auto IsLetter(char c) -> bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
auto IsNameStart(char c) -> bool { return IsLetter(c) || c == '_'; }
auto IsNameChar(char c) -> bool { return IsNameStart(c) || IsDigit(c); }
auto IsSpace(char c) -> bool { return c == ' ' || c == '\t' || c == '\f' || c == '\r'; }

constexpr std::pair<std::string_view, TokenKind> kKeywords[] = {
    {"import", TokenKind::KwImport},   {"true", TokenKind::KwTrue},       {"false", TokenKind::KwFalse},
    {"auto", TokenKind::KwAuto},       {"gpu", TokenKind::KwGpu},         {"fabric", TokenKind::KwFabric},
    {"node", TokenKind::KwNode},       {"cluster", TokenKind::KwCluster}, {"storage", TokenKind::KwStorage},
    {"dataset", TokenKind::KwDataset}, {"model", TokenKind::KwModel},     {"job", TokenKind::KwJob}};

auto KeywordOrIdentifier(llvm::StringRef word) -> TokenKind {
  for (auto [spelling, kind] : kKeywords)
    if (word == llvm::StringRef(spelling.data(), spelling.size())) return kind;
  return TokenKind::Identifier;
}

auto Punctuation(char c) -> std::optional<TokenKind> {
  switch (c) {
    case '{': return TokenKind::LBrace;
    case '}': return TokenKind::RBrace;
    case '[': return TokenKind::LBracket;
    case ']': return TokenKind::RBracket;
    case '(': return TokenKind::LParen;
    case ')': return TokenKind::RParen;
    case '=': return TokenKind::Assign;
    case ':': return TokenKind::Colon;
    case ';': return TokenKind::Semi;
    case ',': return TokenKind::Comma;
    case '.': return TokenKind::Dot;
    case '+': return TokenKind::Plus;
    case '-': return TokenKind::Minus;
    case '*': return TokenKind::Star;
    default: return std::nullopt;
  }
}

}  // namespace

Scanner::Scanner(llvm::StringRef text) : text_(text) {
  for (int i = 0; i < 2 && text_.substr(next_).startswith(kByteOrderMark); ++i) next_ += kByteOrderMark.size();
}

auto Scanner::Fill(size_t k) -> const Token* {
  assert(k < kLookahead);
  Token t;
  while (ahead_count_ <= k && Scan(t)) ahead_[(ahead_first_ + ahead_count_++) % kLookahead] = t;
  return k < ahead_count_ ? &ahead_[(ahead_first_ + k) % kLookahead] : nullptr;
}

void Scanner::Next() {
  if (!Peek()) return;
  ahead_first_ = (ahead_first_ + 1) % kLookahead;
  --ahead_count_;
}

void Scanner::SkipTo(uint32_t offset) {
  ahead_count_ = 0;
  next_ = std::min<uint32_t>(offset, text_.size());
}

// DIGITS : [0-9] ('_'? [0-9])* ; the end, or `at` when none starts there.
auto Scanner::Digits(uint32_t at) const -> uint32_t {
  if (!IsDigit(At(at))) return at;
  uint32_t i = at + 1;
  while (IsDigit(At(i)) || (At(i) == '_' && IsDigit(At(i + 1)))) i += At(i) == '_' ? 2 : 1;
  return i;
}

// UNIT : [A-Za-z%] [A-Za-z0-9]* ('/' [A-Za-z]+)? ; the end, or `at` when none.
auto Scanner::Unit(uint32_t at) const -> uint32_t {
  if (!IsLetter(At(at)) && At(at) != '%') return at;
  uint32_t i = at + 1;
  while (IsLetter(At(i)) || IsDigit(At(i))) ++i;
  if (At(i) == '/' && IsLetter(At(i + 1))) {
    i += 2;
    while (IsLetter(At(i))) ++i;
  }
  return i;
}

// NUMBER : DIGITS ('.' DIGITS)? EXPONENT? UNIT? ; the longest match, so that
// `1e5/s` is a number with the unit `e5/s` rather than `1e5` and `/s`.
auto Scanner::Number(uint32_t begin) const -> uint32_t {
  uint32_t i = Digits(begin);
  if (At(i) == '.' && IsDigit(At(i + 1))) i = Digits(i + 1);
  uint32_t end = std::max(i, Unit(i));
  if (At(i) == 'e' || At(i) == 'E') {
    uint32_t sign = i + 1 + (At(i + 1) == '+' || At(i + 1) == '-' ? 1 : 0);
    uint32_t exponent = Digits(sign);
    if (exponent > sign) end = std::max({end, exponent, Unit(exponent)});
  }
  return end;
}

// STRING : '"' (ESCAPE | ~["\\\r\n])* '"' ;  ESCAPE : '\\' ~[\r\n] ;
// UNTERMINATED_STRING : '"' (ESCAPE | ~["\\\r\n])* '\\'? ;
auto Scanner::String(uint32_t begin) const -> Token {
  uint32_t i = begin + 1;
  while (i < text_.size()) {
    char c = text_[i];
    if (c == '"') return {TokenKind::String, begin, i + 1};
    if (c == '\r' || c == '\n') break;
    if (c == '\\') {
      if (i + 1 >= text_.size() || text_[i + 1] == '\r' || text_[i + 1] == '\n')
        return {TokenKind::UnterminatedString, begin, i + 1};
      ++i;
    }
    ++i;
  }
  return {TokenKind::UnterminatedString, begin, i};
}

auto Scanner::Scan(Token& out) -> bool {
  const auto size = static_cast<uint32_t>(text_.size());
  while (next_ < size) {
    uint32_t begin = next_;
    char c = text_[begin];
    // NL : '\r'? '\n' ; beats WS : [ \t\f\r]+ only where it is longer.
    if (IsSpace(c) && !(c == '\r' && At(begin + 1) == '\n')) {
      while (IsSpace(At(next_))) ++next_;
      continue;
    }
    if (c == '/' && At(begin + 1) == '/') {
      while (next_ < size && text_[next_] != '\r' && text_[next_] != '\n') ++next_;
      continue;
    }
    if (c == '/' && At(begin + 1) == '*') {
      size_t close = text_.find("*/", begin + 2);
      if (close == llvm::StringRef::npos) {
        next_ = size;
        out = {TokenKind::UnterminatedComment, begin, size};
        return true;
      }
      next_ = static_cast<uint32_t>(close + 2);
      continue;
    }
    out = {TokenKind::BadChar, begin, begin + 1};
    if (c == '\n' || c == '\r') out = {TokenKind::Newline, begin, begin + (c == '\r' ? 2u : 1u)};
    else if (c == '/') out.kind = TokenKind::Slash;
    else if (c == '"') out = String(begin);
    else if (IsDigit(c)) out = {TokenKind::Number, begin, Number(begin)};
    else if (auto p = Punctuation(c)) out.kind = *p;
    else if (IsNameStart(c)) {
      uint32_t end = begin + 1;
      while (IsNameChar(At(end))) ++end;
      out = {KeywordOrIdentifier(text_.slice(begin, end)), begin, end};
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      // One code point: a lead byte and the continuation bytes after it.
      while (out.end < size && (static_cast<unsigned char>(text_[out.end]) & 0xC0) == 0x80) ++out.end;
    }
    next_ = out.end;
    return true;
  }
  return false;
}

}  // namespace avf::lex
