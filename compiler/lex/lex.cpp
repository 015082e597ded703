// The lexer runs the ANTLR-generated AvfLexer and converts its tokens into
// TokenizedBuffer. Nothing outside compiler/lex and compiler/parse sees ANTLR.
#include "antlr4-runtime.h"  // first: it #undefs EOF
#include "AvfLexer.h"

#include "lex/lex.h"

#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/raw_ostream.h>

#include "diag/render.h"
#include "units/quantity.h"

namespace avf::lex {

namespace {

using antlrgen::AvfLexer;

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

auto KindFromAntlr(size_t type) -> TokenKind {
  switch (type) {
#define TOKEN(Name, AntlrType, Spelling) \
  case AvfLexer::AntlrType:              \
    return TokenKind::Name;
#include "lex/token_kinds.def"
#undef TOKEN
    default: return TokenKind::BadChar;
  }
}

// Byte offset of each code point: ANTLR indexes the UTF-32 text it decoded,
// diagnostics point into the UTF-8 buffer.
auto CodePointOffsets(llvm::StringRef text) -> std::vector<uint32_t> {
  std::vector<uint32_t> offsets;
  offsets.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) offsets.push_back(i);
  }
  offsets.push_back(text.size());
  return offsets;
}

// Tokens after which a newline never ends a field: the value continues.
auto ContinuesOnNextLine(TokenKind kind) -> bool {
  switch (kind) {
    case TokenKind::LBrace: case TokenKind::LBracket: case TokenKind::LParen:
    case TokenKind::Assign: case TokenKind::Colon: case TokenKind::Comma: case TokenKind::Dot:
    case TokenKind::Plus: case TokenKind::Minus: case TokenKind::Star: case TokenKind::Slash:
    case TokenKind::Newline: case TokenKind::Semi:
      return true;
    default:
      return false;
  }
}

auto IsOpener(TokenKind k) -> bool {
  return k == TokenKind::LBrace || k == TokenKind::LBracket || k == TokenKind::LParen;
}
auto OpenerOf(TokenKind closer) -> TokenKind {
  switch (closer) {
    case TokenKind::RBrace: return TokenKind::LBrace;
    case TokenKind::RBracket: return TokenKind::LBracket;
    case TokenKind::RParen: return TokenKind::LParen;
    default: return TokenKind::EndOfFile;
  }
}

}  // namespace

// Builds a TokenizedBuffer; a class only so that it may fill the private
// members of TokenizedBuffer.
class Lexer {
 public:
  Lexer(TokenizedBuffer& out, diag::DiagnosticEngine& diags) : out_(out), diags_(diags) {}

  void Run() {
    llvm::StringRef text = out_.source();
    std::vector<uint32_t> offsets = CodePointOffsets(text);
    antlr4::ANTLRInputStream input(text.str());
    AvfLexer lexer(&input);
    lexer.removeErrorListeners();
    for (;;) {
      std::unique_ptr<antlr4::Token> t = lexer.nextToken();
      size_t type = t->getType();
      if (type == antlr4::Token::EOF) break;
      if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL && type != AvfLexer::UNTERMINATED_COMMENT) {
        continue;
      }
      Token token{KindFromAntlr(type), offsets[t->getStartIndex()], offsets[t->getStopIndex() + 1]};
      Check(token);
      Append(token);
      if (diags_.limit_reached()) {
        out_.parseable_ = false;
        break;
      }
    }
    uint32_t end = static_cast<uint32_t>(text.size());
    out_.tokens_.push_back({TokenKind::EndOfFile, end, end});
  }

 private:
  // Reports malformed tokens; the bad ones are not appended.
  void Check(const Token& t) {
    llvm::StringRef text = out_.Text(t);
    switch (t.kind) {
      case TokenKind::BadChar: ReportBadChar(t, text); break;
      case TokenKind::UnterminatedString:
        Error(diags_.Report(diag::DiagId::UnterminatedString, out_.Range(t))
                  .Help("add a closing `\"`; strings cannot span lines (use `\\n`)"));
        break;
      case TokenKind::UnterminatedComment:
        Error(diags_.Report(diag::DiagId::UnterminatedComment, {out_.Loc(t.begin), out_.Loc(t.begin + 2)})
                  .Help("close the comment with `*/`"));
        break;
      case TokenKind::String: CheckEscapes(t, text); break;
      case TokenKind::Number: CheckNumber(t, text); break;
      default: break;
    }
  }

  void Error(const diag::DiagnosticBuilder&) { out_.has_errors_ = true; }

  void ReportBadChar(const Token& t, llvm::StringRef text) {
    std::string shown = text.str();
    if (text.size() == 1 && (static_cast<unsigned char>(text[0]) < 0x20 || text[0] == 0x7f)) {
      shown = fmt::format("\\x{:02X}", static_cast<unsigned>(text[0]));
    }
    auto b = diags_.Report(diag::DiagId::UnexpectedCharacter, out_.Range(t), shown);
    if (text == "#") b.Help("comments start with `//`");
    if (text == "'") b.Help("strings use double quotes: \"...\"");
    Error(b);
  }

  void CheckEscapes(const Token& t, llvm::StringRef text) {
    for (size_t i = 1; i + 1 < text.size(); ++i) {
      if (text[i] != '\\') continue;
      char c = text[i + 1];
      llvm::SMRange range{out_.Loc(t.begin + i), out_.Loc(t.begin + i + 2)};
      if (c == 'u') {
        CheckUnicodeEscape(t, text, i);
      } else if (c != '"' && c != '\\' && c != 'n' && c != 't') {
        size_t len = 1;
        while ((static_cast<unsigned char>(text[i + 1 + len]) & 0xC0) == 0x80) ++len;
        range.End = out_.Loc(t.begin + i + 1 + len);
        Error(diags_.Report(diag::DiagId::InvalidEscape, range, text.substr(i + 1, len).str())
                  .Help("the escapes are `\\\"` `\\\\` `\\n` `\\t` `\\u{...}`"));
      }
      ++i;
    }
  }

  void CheckUnicodeEscape(const Token& t, llvm::StringRef text, size_t i) {
    size_t open = i + 2;
    size_t close = text.find('}', open);
    std::string problem;
    if (open >= text.size() || text[open] != '{' || close == llvm::StringRef::npos) {
      problem = "write `\\u{` hex digits `}`";
      close = open;
    } else {
      llvm::StringRef hex = text.slice(open + 1, close);
      unsigned value = 0;
      if (hex.empty() || hex.size() > 6 || hex.getAsInteger(16, value)) {
        problem = "expected 1 to 6 hex digits";
      } else if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
        problem = fmt::format("U+{:X} is not a Unicode scalar value", value);
      } else if (value == 0) {
        problem = "NUL is not allowed in strings";
      }
    }
    if (problem.empty()) return;
    llvm::SMRange range{out_.Loc(t.begin + i), out_.Loc(t.begin + std::min(close + 1, text.size() - 1))};
    Error(diags_.Report(diag::DiagId::InvalidUnicodeEscape, range, problem));
  }

  void CheckNumber(const Token& t, llvm::StringRef text) {
    units::LiteralResult r = units::ParseLiteral(std::string_view(text.data(), text.size()));
    switch (r.error) {
      case units::LiteralError::kNone: return;
      case units::LiteralError::kUnknownUnit: {
        llvm::SMRange range{out_.Loc(t.begin + r.unit_offset), out_.Loc(t.end)};
        auto b = diags_.Report(diag::DiagId::UnknownUnit, range, r.unit);
        if (!r.suggestion.empty()) {
          b.Help(fmt::format("did you mean `{}`?", r.suggestion)).Fix(range, r.suggestion);
        } else {
          b.Help("units are listed in docs/language.md; leave a space between a number and a name");
        }
        Error(b);
        return;
      }
      case units::LiteralError::kTooLarge:
        Error(diags_.Report(diag::DiagId::NumberTooLarge, out_.Range(t), text.str()));
        return;
      case units::LiteralError::kNotFinite:
        Error(diags_.Report(diag::DiagId::NumberNotFinite, out_.Range(t), text.str()));
        return;
    }
  }

  // Keeps a token, dropping newlines that cannot end a field and tracking
  // bracket nesting.
  void Append(const Token& t) {
    switch (t.kind) {
      case TokenKind::BadChar: case TokenKind::UnterminatedString: case TokenKind::UnterminatedComment:
        return;
      case TokenKind::Newline:
        if (!open_.empty() && open_.back().kind != TokenKind::LBrace) return;
        if (out_.tokens_.empty() || ContinuesOnNextLine(out_.tokens_.back().kind)) return;
        break;
      case TokenKind::RBrace: case TokenKind::RBracket: case TokenKind::RParen:
        Close(t.kind);
        break;
      default:
        if (IsOpener(t.kind)) Open(t);
        break;
    }
    out_.tokens_.push_back(t);
  }

  void Open(const Token& t) {
    open_.push_back(t);
    if (open_.size() == kMaxNesting + 1 && out_.parseable_) {
      out_.parseable_ = false;
      Error(diags_.Report(diag::DiagId::NestingTooDeep, out_.Range(t), kMaxNesting));
    }
  }

  void Close(TokenKind closer) {
    TokenKind opener = OpenerOf(closer);
    for (size_t i = open_.size(); i > 0; --i) {
      if (open_[i - 1].kind == opener) {
        open_.resize(i - 1);
        return;
      }
    }
  }

  TokenizedBuffer& out_;
  diag::DiagnosticEngine& diags_;
  std::vector<Token> open_;
};

auto Spelling(TokenKind kind) -> std::string_view { return kSpellings[static_cast<size_t>(kind)]; }
auto KindName(TokenKind kind) -> std::string_view { return kNames[static_cast<size_t>(kind)]; }

auto Lex(const source::SourceSet& sources, unsigned buffer_id, diag::DiagnosticEngine& diags)
    -> TokenizedBuffer {
  TokenizedBuffer out(buffer_id, sources.Text(buffer_id));
  Lexer(out, diags).Run();
  return out;
}

auto DecodeString(llvm::StringRef token_text) -> std::string {
  llvm::StringRef body = token_text.drop_front().drop_back();
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      continue;
    }
    char e = body[++i];
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case '"': case '\\': out.push_back(e); break;
      case 'u': {
        size_t close = body.find('}', i);
        unsigned value = 0;
        if (i + 1 < body.size() && body[i + 1] == '{' && close != llvm::StringRef::npos &&
            !body.slice(i + 2, close).getAsInteger(16, value) && value != 0 && value <= 0x10FFFF &&
            !(value >= 0xD800 && value <= 0xDFFF)) {
          char buf[UNI_MAX_UTF8_BYTES_PER_CODE_POINT];
          char* p = buf;
          llvm::ConvertCodePointToUTF8(value, p);
          out.append(buf, p);
          i = close;
        }
        break;
      }
      default: break;  // reported by the lexer
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
    os << '\n';
  }
}

}  // namespace avf::lex
