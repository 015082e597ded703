// The lexer turns the scanner's tokens (scanner.h) into TokenizedBuffer,
// reporting the malformed ones.
#include "lex/lex.h"

#include <optional>

#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/raw_ostream.h>

#include "diag/render.h"
#include "lex/layout.h"
#include "lex/scanner.h"
#include "lex/token_classes.h"
#include "units/quantity.h"

namespace avf::lex {

namespace {

constexpr std::string_view kSpellings[] = {
#define TOKEN(Name, AntlrType, Spelling) Spelling,
#include "lex/token_kinds.def"
#undef TOKEN
};
constexpr std::string_view kNames[] = {
#define TOKEN(Name, AntlrType, Spelling) #Name,
#include "lex/token_kinds.def"
#undef TOKEN
};

// Code points that look like nothing (or like a space) in an editor.
auto InvisibleCharacterName(uint32_t cp) -> const char* {
  switch (cp) {
    case 0x00A0: return "no-break space";
    case 0x200B: return "zero width space";
    case 0x200C: return "zero width non-joiner";
    case 0x200D: return "zero width joiner";
    case 0x2028: return "line separator";
    case 0x2029: return "paragraph separator";
    case 0x202F: return "narrow no-break space";
    case 0x2060: return "word joiner";
    case 0xFEFF: return "zero width no-break space (byte order mark)";
    default: return nullptr;
  }
}

auto DecodeCodePoint(llvm::StringRef text) -> uint32_t {
  llvm::UTF32 cp = 0;
  const auto* begin = reinterpret_cast<const llvm::UTF8*>(text.begin());
  if (llvm::convertUTF8Sequence(&begin, begin + text.size(), &cp, llvm::strictConversion) != llvm::conversionOK) {
    return 0xFFFD;
  }
  return cp;
}

// One escape sequence of a string body, starting at its backslash: the
// lexer reports the invalid ones and DecodeString decodes the valid ones, so
// the escape grammar lives here only.
struct Escape {
  size_t length = 2;                   // bytes from the backslash
  std::optional<uint32_t> code_point;  // what it stands for, when valid
  std::optional<diag::DiagId> error;   // InvalidEscape or InvalidUnicodeEscape
  std::string detail;                  // the escape as written, or what is wrong
};

auto ValidEscape(uint32_t code_point, size_t length = 2) -> Escape {
  Escape e;
  e.length = length;
  e.code_point = code_point;
  return e;
}

auto InvalidEscape(diag::DiagId error, size_t length, std::string detail) -> Escape {
  Escape e;
  e.length = length;
  e.error = error;
  e.detail = std::move(detail);
  return e;
}

auto ReadUnicodeEscape(llvm::StringRef body, size_t i) -> Escape {
  size_t open = i + 2;
  size_t close = body.find('}', open);
  auto invalid = [&](size_t length, std::string detail) {
    return InvalidEscape(diag::DiagId::InvalidUnicodeEscape, length, std::move(detail));
  };
  if (open >= body.size() || body[open] != '{' || close == llvm::StringRef::npos) {
    return invalid(std::min(open + 1, body.size()) - i, "write `\\u{` hex digits `}`");
  }
  size_t length = close + 1 - i;
  llvm::StringRef hex = body.slice(open + 1, close);
  unsigned value = 0;
  if (hex.empty() || hex.size() > 6 || hex.getAsInteger(16, value))
    return invalid(length, "expected 1 to 6 hex digits");
  if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    return invalid(length, fmt::format("U+{:X} is not a Unicode scalar value", value));
  }
  if (value == 0) return invalid(length, "NUL is not allowed in strings");
  return ValidEscape(value, length);
}

// `body` is a string token without its quotes; body[i] is a backslash that
// is not the last byte.
auto ReadEscape(llvm::StringRef body, size_t i) -> Escape {
  char c = body[i + 1];
  switch (c) {
    case 'n': return ValidEscape('\n');
    case 't': return ValidEscape('\t');
    case '"':
    case '\\': return ValidEscape(static_cast<uint32_t>(c));
    case 'u': return ReadUnicodeEscape(body, i);
    default: break;
  }
  size_t len = 1;
  while (i + 1 + len < body.size() && (static_cast<unsigned char>(body[i + 1 + len]) & 0xC0) == 0x80) ++len;
  return InvalidEscape(diag::DiagId::InvalidEscape, 1 + len, body.substr(i + 1, len).str());
}

}  // namespace

// Builds a TokenizedBuffer; a class only so that it may fill the private
// members of TokenizedBuffer. Two passes: Scan() takes the scanner's tokens
// and reports malformed ones; LayOut (layout.cpp) drops the newlines that
// cannot end a field and balances brackets (see lex.h).
class Lexer {
 public:
  Lexer(TokenizedBuffer& out, const llvm::SourceMgr& sm, diag::DiagnosticEngine& diags)
      : out_(out), sm_(sm), diags_(diags) {}

  void Run() {
    std::vector<Token> raw = Scan();
    LayOut(out_, sm_, diags_, dropped_, raw);
    // Past the error limit the parser would only add noise.
    if (diags_.limit_reached()) out_.parseable_ = false;
    uint32_t end = static_cast<uint32_t>(out_.source().size());
    out_.tokens_.push_back({TokenKind::EndOfFile, end, end});
  }

 private:
  // Every token of the buffer, newlines included, malformed ones reported;
  // lexing goes on past the error limit so that the count of errors not shown
  // is right.
  auto Scan() -> std::vector<Token> {
    Scanner cursor(out_.source());
    std::vector<Token> raw;
    // Enough for dense source, so that the vector is not copied as it grows;
    // capacity never written takes no memory.
    raw.reserve(out_.source().size() / 2 + 16);
    while (const Token* next = cursor.Peek()) {
      Token t = *next;
      cursor.Next();
      if (t.kind == TokenKind::BadChar) {
        BadChar(t, cursor, raw);
      } else if (Check(t, !raw.empty() && IsKindKeyword(raw.back().kind))) {
        raw.push_back(t);
      }
    }
    return raw;
  }

  // Reports a malformed token; false when it is not kept. An unterminated
  // string is kept (the parser sees a string), so that it causes no more errors.
  // A number after a declaration kind (`model 7b`) stands for a name: its unit
  // is not checked, the parser reports the missing name.
  auto Check(const Token& t, bool after_kind) -> bool {
    llvm::StringRef text = out_.Text(t);
    switch (t.kind) {
      case TokenKind::UnterminatedString:
        Error(diags_.Report(diag::DiagId::UnterminatedString, out_.Range(t))
                  .Help("add a closing `\"`; strings cannot span lines (use `\\n`)"));
        return true;
      case TokenKind::UnterminatedComment:
        Error(diags_.Report(diag::DiagId::UnterminatedComment, {out_.Loc(t.begin), out_.Loc(t.begin + 2)})
                  .Help("close the comment with `*/`"));
        return false;
      case TokenKind::String: CheckEscapes(t, text); return true;
      case TokenKind::Number:
        if (!after_kind) CheckNumber(t, text);
        return true;
      default: return true;
    }
  }

  void Error(const diag::DiagnosticBuilder&) { out_.has_errors_ = true; }

  // A character outside the language (already taken from the cursor). Some
  // are read as what was probably meant, so that one mistake makes one error:
  // `#` starts a comment, `'x'` and `“x”` are strings, `–` is `-`, and a name
  // with a non-ASCII letter (`modèle`) is one name.
  void BadChar(const Token& t, Scanner& cursor, std::vector<Token>& raw) {
    llvm::StringRef text = out_.Text(t);
    if (IsQuote(text) && QuotedString(t, cursor, raw)) return;
    if (LookAlike(t, text, raw)) return;
    uint32_t cp = text.size() > 1 ? DecodeCodePoint(text) : static_cast<unsigned char>(text[0]);
    const char* invisible = text.size() > 1 ? InvisibleCharacterName(cp) : nullptr;
    if (text.size() > 1 && !invisible && !IsQuote(text) && ForeignName(t, cursor, raw)) return;
    std::string shown = text.str();
    if (cp < 0x20 || cp == 0x7f) shown = fmt::format("\\x{:02X}", cp);
    if (invisible) shown = fmt::format("U+{:04X}", cp);
    auto b = diags_.Report(diag::DiagId::UnexpectedCharacter, out_.Range(t), shown);
    if (text == "#") {
      // The rest of the line is read as a comment.
      size_t eol = out_.source().find_first_of("\r\n", t.end);
      cursor.SkipTo(eol == llvm::StringRef::npos ? out_.source().size() : eol);
      b.Help("comments start with `//`").Fix(out_.Range(t), "//");
    }
    if (IsQuote(text)) b.Help("strings use straight double quotes: \"...\"");
    if (invisible) b.Help(fmt::format("remove the {} (invisible in most editors)", invisible));
    Error(b);
    dropped_.push_back(t.begin);
  }

  // A typographic dash or times sign, pasted from a document: reported, then
  // read as the operator it looks like.
  auto LookAlike(const Token& t, llvm::StringRef text, std::vector<Token>& raw) -> bool {
    static constexpr std::pair<std::string_view, TokenKind> kLookAlikes[] = {
        {"\u2010", TokenKind::Minus}, {"\u2012", TokenKind::Minus}, {"\u2013", TokenKind::Minus},
        {"\u2014", TokenKind::Minus}, {"\u2212", TokenKind::Minus}, {"\u00D7", TokenKind::Star},
        {"\u00F7", TokenKind::Slash}, {"\u2215", TokenKind::Slash}};
    for (auto [chars, kind] : kLookAlikes) {
      if (text != llvm::StringRef(chars.data(), chars.size())) continue;
      std::string op = kind == TokenKind::Minus ? "-" : kind == TokenKind::Star ? "*" : "/";
      Error(diags_.Report(diag::DiagId::UnexpectedCharacter, out_.Range(t), text.str()).Suggest(out_.Range(t), op));
      raw.push_back({kind, t.begin, t.end});
      return true;
    }
    return false;
  }

  static auto IsQuote(llvm::StringRef c) -> bool {
    return c == "'" || c == "\u2018" || c == "\u2019" || c == "\u201C" || c == "\u201D" || c == "\u201E";
  }

  // `'text'` or `“text”` on one line: one error, then a string.
  auto QuotedString(const Token& open, Scanner& cursor, std::vector<Token>& raw) -> bool {
    llvm::StringRef source = out_.source();
    size_t close = open.end;
    size_t close_len = 0;
    for (; close < source.size() && source[close] != '\n' && source[close] != '\r'; ++close) {
      if (source[close] == '\'') close_len = 1;
      for (llvm::StringRef q : {"\u2018", "\u2019", "\u201C", "\u201D", "\u201E"}) {
        if (source.substr(close).startswith(q)) close_len = q.size();
      }
      if (close_len) break;
    }
    if (!close_len) return false;
    Token quoted{TokenKind::String, open.begin, static_cast<uint32_t>(close + close_len)};
    llvm::StringRef inner = source.slice(open.end, close);
    auto b = diags_.Report(diag::DiagId::UnexpectedCharacter, out_.Range(quoted), out_.Text(open).str());
    b.Help("strings use straight double quotes: \"...\"");
    if (!inner.contains('"') && !inner.contains('\\')) b.Fix(out_.Range(quoted), "\"" + inner.str() + "\"");
    Error(b);
    raw.push_back(quoted);
    cursor.SkipTo(quoted.end);
    return true;
  }

  // Non-ASCII characters touching a name, a number or each other (`modèle`,
  // `модель`) form one name with one error, at the first of them. False for
  // a lone character.
  auto ForeignName(const Token& first, Scanner& cursor, std::vector<Token>& raw) -> bool {
    auto foreign = [&](const Token& t) {
      llvm::StringRef c = out_.Text(t);
      return t.kind == TokenKind::BadChar && c.size() > 1 && !IsQuote(c) && !InvisibleCharacterName(DecodeCodePoint(c));
    };
    auto word = [](const Token& t) { return IsAnyName(t.kind) || t.kind == TokenKind::Number; };
    bool extend = !raw.empty() && word(raw.back()) && raw.back().end == first.begin;
    uint32_t begin = extend ? raw.back().begin : first.begin;
    uint32_t end = first.end;
    bool more = false;
    for (const Token* n = cursor.Peek(); n && n->begin == end && (foreign(*n) || word(*n)); n = cursor.Peek()) {
      end = n->end;
      more = true;
      cursor.Next();
    }
    if (!extend && !more) return false;
    Token name{TokenKind::Identifier, begin, end};
    Error(diags_.Report(diag::DiagId::UnexpectedCharacter, out_.Range(first), out_.Text(first).str())
              .Range(out_.Range(name))
              .Help("names are written with ASCII letters, digits and `_`"));
    if (extend) raw.back() = name;
    else raw.push_back(name);
    return true;
  }

  void CheckEscapes(const Token& t, llvm::StringRef text) {
    llvm::StringRef body = text.drop_front().drop_back();
    for (size_t i = 0; i + 1 < body.size(); ++i) {
      if (body[i] != '\\') continue;
      Escape e = ReadEscape(body, i);
      if (e.error) {
        uint32_t begin = t.begin + 1 + static_cast<uint32_t>(i);
        llvm::SMRange at(out_.Loc(begin), out_.Loc(begin + e.length));
        bool plain = *e.error == diag::DiagId::InvalidEscape;
        auto b = plain ? diags_.Report(diag::DiagId::InvalidEscape, at, e.detail)
                       : diags_.Report(diag::DiagId::InvalidUnicodeEscape, at, e.detail);
        if (plain) b.Help("the escapes are `\\\"` `\\\\` `\\n` `\\t` `\\u{...}`");
        Error(b);
      }
      i += e.code_point ? e.length - 1 : 1;
    }
  }

  void CheckNumber(const Token& t, llvm::StringRef text) {
    units::LiteralResult r = units::ParseLiteral(std::string_view(text.data(), text.size()));
    switch (r.error) {
      case units::LiteralError::kNone: return;
      case units::LiteralError::kUnknownUnit: {
        llvm::SMRange range{out_.Loc(t.begin + r.unit_offset), out_.Loc(t.end)};
        auto b = diags_.Report(diag::DiagId::UnknownUnit, range, diag::ShortText(r.unit));
        if (!r.suggestion.empty()) {
          b.Suggest(range, r.suggestion);
        } else {
          b.Help("units are listed in docs/language.md; leave a space between a number and a name");
        }
        Error(b);
        return;
      }
      case units::LiteralError::kTooLarge:
        Error(diags_.Report(diag::DiagId::NumberTooLarge, out_.Range(t), diag::ShortText(text)));
        return;
      case units::LiteralError::kNotFinite:
        Error(diags_.Report(diag::DiagId::NumberNotFinite, out_.Range(t), diag::ShortText(text)));
        return;
    }
  }

  TokenizedBuffer& out_;
  const llvm::SourceMgr& sm_;
  diag::DiagnosticEngine& diags_;
  std::vector<uint32_t> dropped_;  // offsets of the characters Scan reported and dropped
};

auto Spelling(TokenKind kind) -> std::string_view { return kSpellings[static_cast<size_t>(kind)]; }
auto KindName(TokenKind kind) -> std::string_view { return kNames[static_cast<size_t>(kind)]; }

auto Lex(const source::SourceSet& sources, unsigned buffer_id, diag::DiagnosticEngine& diags) -> TokenizedBuffer {
  TokenizedBuffer out(buffer_id, sources.Text(buffer_id));
  Lexer(out, sources.mgr(), diags).Run();
  return out;
}

auto DecodeString(llvm::StringRef token_text) -> std::string {
  llvm::StringRef body = token_text.drop_front().drop_back();
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out.push_back(body[i]);
      continue;
    }
    Escape e = ReadEscape(body, i);
    if (e.code_point) {
      char buf[UNI_MAX_UTF8_BYTES_PER_CODE_POINT];
      char* p = buf;
      llvm::ConvertCodePointToUTF8(*e.code_point, p);
      out.append(buf, p);
      i += e.length - 1;
    } else {
      ++i;  // reported by the lexer; only the backslash and its letter are dropped
    }
  }
  return out;
}

void DumpTokens(const source::SourceSet& sources, const TokenizedBuffer& tokens, llvm::raw_ostream& os) {
  for (const Token& t : tokens.tokens()) {
    diag::Position pos = diag::PositionOf(sources.mgr(), tokens.Loc(t.begin));
    std::string text;
    for (char c : tokens.Text(t)) {
      if (c == '\n') text += "\\n";
      else if (c == '\r') text += "\\r";
      else text.push_back(c);
    }
    os << pos.line << ':' << pos.column << ' ' << KindName(t.kind);
    if (!text.empty()) os << " '" << text << '\'';
    if (TokenizedBuffer::IsInserted(t)) os << " (inserted)";
    os << '\n';
  }
}

}  // namespace avf::lex
