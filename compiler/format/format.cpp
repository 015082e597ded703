#include "format/format.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "lex/token_classes.h"

namespace avf::format {

namespace {

using lex::Token;
using lex::TokenKind;

struct Comment {
  std::string text;
  bool own_line = false;      // a newline (or the file's start) comes before it
  bool blank_before = false;  // a blank line comes before it
};

// What the source has between two tokens besides spaces and separators.
struct Gap {
  std::vector<Comment> comments;
  bool blank_before_token = false;  // a blank line right before the next token
};

auto ScanGap(std::string_view text, bool file_start) -> Gap {
  Gap gap;
  int newlines = file_start ? 1 : 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++newlines;
      continue;
    }
    bool line = text.substr(i, 2) == "//", block = text.substr(i, 2) == "/*";
    if (!line && !block) continue;
    size_t end = line ? text.find('\n', i) : text.find("*/", i + 2) + 2;
    if (end == std::string_view::npos || end < i) end = text.size();
    std::string_view comment = text.substr(i, end - i);
    if (line && comment.ends_with('\r')) comment.remove_suffix(1);  // a CRLF file's
    gap.comments.push_back({std::string(comment), newlines > 0, newlines > 1});
    newlines = 0;
    i = end - 1;
  }
  gap.blank_before_token = newlines > 1;
  return gap;
}

enum class Blank { kNone, kKeep, kForce };

// Marks where a comment after code starts, until AlignComments places it.
constexpr char kCommentMark = '\x01';

// The comments after code on consecutive lines start in one column, two
// spaces after the longest code of the run (unless that passes kWidth).
auto AlignComments(const std::string& text) -> std::string {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string out;
  for (size_t i = 0; i < lines.size();) {
    size_t j = i, column = 0;
    for (; j < lines.size() && lines[j].find(kCommentMark) != std::string::npos; ++j) {
      column = std::max(column, lines[j].find(kCommentMark) + 2);
    }
    if (j == i) {
      out += lines[i++] + "\n";
      continue;
    }
    for (; i < j; ++i) {
      size_t mark = lines[i].find(kCommentMark);
      size_t pad = column <= kWidth ? column - mark : 2;
      out += lines[i].substr(0, mark) + std::string(pad, ' ') + lines[i].substr(mark + 1) + "\n";
    }
  }
  return out;
}

// The text written so far and where the writing is.
struct Output {
  std::string text;
  size_t line_start = 0;
  int indent = 0, continuation = 0;
  size_t broken_before = SIZE_MAX;  // the token a line break was just made before
};

class Formatter {
 public:
  explicit Formatter(const lex::TokenizedBuffer& buffer) : text_(buffer.source()) {
    uint32_t previous_end = 0;
    for (const Token& t : buffer.tokens()) {
      if (t.kind == TokenKind::Newline || t.kind == TokenKind::Semi || t.kind == TokenKind::EndOfFile) continue;
      gaps_.push_back(ScanGap(text_.substr(previous_end, t.begin - previous_end), tokens_.empty()));
      tokens_.push_back(t);
      previous_end = t.end;
    }
    gaps_.push_back(ScanGap(text_.substr(previous_end), tokens_.empty()));
    match_.assign(tokens_.size(), 0);
    std::vector<size_t> open;
    for (size_t k = 0; k < tokens_.size(); ++k) {
      if (lex::IsOpener(tokens_[k].kind)) open.push_back(k);
      if (lex::IsCloser(tokens_[k].kind) && !open.empty()) {
        match_[open.back()] = k, match_[k] = open.back();
        open.pop_back();
      }
    }
  }

  auto File() -> std::string {
    size_t k = Imports();
    bool first = k == 0;
    bool after_import = false;
    while (k < tokens_.size()) {
      // An import after a declaration (W0211) stays where it is, so that
      // the warning and the comments around it stay with it.
      const bool import = Kind(k) == TokenKind::KwImport;
      BreakBefore(k, first || (import && after_import) ? Blank::kKeep : Blank::kForce);
      first = false;
      k = import ? LateImport(k) : Declaration(k);
      after_import = import;
    }
    BreakBefore(tokens_.size(), Blank::kKeep);
    while (o_.text.size() > 1 && o_.text.ends_with("\n\n")) o_.text.pop_back();
    return AlignComments(o_.text);
  }

 private:
  auto Kind(size_t k) const -> TokenKind { return k < tokens_.size() ? tokens_[k].kind : TokenKind::EndOfFile; }
  auto Text(size_t k) const -> std::string_view {
    return text_.substr(tokens_[k].begin, tokens_[k].end - tokens_[k].begin);
  }

  // --- output -------------------------------------------------------------

  auto LineEmpty() const -> bool { return o_.text.size() == o_.line_start; }
  auto Column() const -> size_t { return LineEmpty() ? Indent() : o_.text.size() - o_.line_start; }
  auto Indent() const -> size_t { return 2 * static_cast<size_t>(o_.indent + o_.continuation); }

  void Put(std::string_view s) {
    if (LineEmpty()) {
      s.remove_prefix(std::min(s.find_first_not_of(' '), s.size()));
      o_.text.append(Indent(), ' ');
    }
    o_.text += s;
    if (size_t nl = o_.text.rfind('\n'); nl != std::string::npos && nl >= o_.line_start) o_.line_start = nl + 1;
  }

  void EndLine() {
    while (!LineEmpty() && o_.text.back() == ' ') o_.text.pop_back();
    o_.text += '\n';
    o_.line_start = o_.text.size();
  }

  void BlankLine() {
    if (!o_.text.empty() && !o_.text.ends_with("\n\n")) EndLine();
  }

  // Token k, after the comments the source has right before it.
  void Emit(size_t k, std::string_view text) {
    if (k != o_.broken_before) InlineComments(k);
    o_.broken_before = SIZE_MAX;
    Put(text);
  }

  // Comments inside a value: a `/* */` stays in the line; a `//` ends it,
  // and the value goes on, indented, on the next (a newline is allowed
  // wherever the source had one).
  void InlineComments(size_t k) {
    for (const Comment& c : gaps_[k].comments) {
      if (c.text.starts_with("//")) {
        if (!LineEmpty()) o_.text += kCommentMark;
        Put(c.text);
        EndLine();
        o_.continuation = 1;
      } else {
        Put(LineEmpty() ? c.text : " " + c.text);
      }
    }
  }

  // A line break before token k (k == size: the end of the file): comments
  // that follow code end its line, the others get lines of their own.
  void BreakBefore(size_t k, Blank blank) {
    const Gap& g = gaps_[k];
    size_t c = 0;
    for (; c < g.comments.size() && !g.comments[c].own_line; ++c) {
      if (!LineEmpty()) o_.text += c == 0 ? std::string(1, kCommentMark) : " ";
      Put(g.comments[c].text);
    }
    if (!LineEmpty()) EndLine();
    bool forced = false;
    for (; c < g.comments.size(); ++c) {
      if ((blank == Blank::kForce && !forced) || (blank != Blank::kNone && g.comments[c].blank_before)) BlankLine();
      forced = true;
      Put(g.comments[c].text);
      EndLine();
      if (blank == Blank::kNone) blank = Blank::kKeep;
    }
    if ((blank == Blank::kForce && !forced) || (blank != Blank::kNone && g.blank_before_token)) BlankLine();
    o_.broken_before = k;
  }

  // --- structure ----------------------------------------------------------

  // `import "..."` at the file's start, sorted when no comment is among them.
  auto Imports() -> size_t {
    std::vector<size_t> at;
    for (size_t k = 0; Kind(k) == TokenKind::KwImport && Kind(k + 1) == TokenKind::String; k += 2) at.push_back(k);
    if (at.empty()) return 0;
    // Comments among them (the file's first ones aside, and those on the
    // next line on) keep them in their order.
    bool comments = false;
    for (size_t k : at) comments |= (k > 0 && !gaps_[k].comments.empty()) || !gaps_[k + 1].comments.empty();
    const Gap& after = gaps_[at.back() + 2];
    comments |= !after.comments.empty() && !after.comments.front().own_line;
    std::vector<size_t> order = at;
    if (!comments) {
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return Text(a + 1) < Text(b + 1); });
    }
    BreakBefore(at[0], Blank::kNone);
    for (size_t i = 0; i < order.size(); ++i) {
      if (i > 0 && comments) BreakBefore(order[i], Blank::kNone);
      if (i > 0 && !comments) EndLine();
      o_.broken_before = order[i];
      Emit(order[i], "import ");
      Emit(order[i] + 1, Text(order[i] + 1));
    }
    return at.back() + 2;
  }

  auto LateImport(size_t k) -> size_t {
    Emit(k, "import ");
    Emit(k + 1, Text(k + 1));
    return k + 2;
  }

  // KIND NAME [: BASE] BODY
  auto Declaration(size_t k) -> size_t {
    Emit(k, Text(k));
    Emit(k + 1, " " + std::string(Text(k + 1)));
    k += 2;
    if (Kind(k) == TokenKind::Colon) {
      Emit(k, " : ");
      Emit(k + 1, Text(k + 1));
      k += 2;
    }
    Put(" ");
    Body(k);
    return match_[k] + 1;
  }

  // NAME = VALUE | NAME BODY
  auto Field(size_t k) -> size_t {
    Emit(k, Text(k));
    if (Kind(k + 1) == TokenKind::Assign) {
      Emit(k + 1, " = ");
      return Expr(k + 2);
    }
    Put(" ");
    Body(k + 1);
    return match_[k + 1] + 1;
  }

  void Body(size_t open) {
    size_t close = match_[open];
    if (std::optional<std::string> line = OneLine(open); line && Column() + line->size() <= kWidth) {
      Emit(open, *line);
      return;
    }
    Emit(open, "{");
    ++o_.indent;
    for (size_t k = open + 1; k < close;) {
      BreakBefore(k, k == open + 1 ? Blank::kNone : Blank::kKeep);
      k = Field(k);
      o_.continuation = 0;
    }
    BreakBefore(close, Blank::kNone);
    --o_.indent;
    Emit(close, "}");
  }

  // The body on one line, when it holds no record and no comment.
  auto OneLine(size_t open) -> std::optional<std::string> {
    size_t close = match_[open];
    if (!Flat(open)) return std::nullopt;
    std::string line = Render([&] {
      Put("{");
      for (size_t k = open + 1; k < close;) {
        Put(k == open + 1 ? " " : "; ");
        k = Field(k);
      }
      Put(close == open + 1 ? "}" : " }");
    });
    if (line.find('\n') != std::string::npos) return std::nullopt;
    return line;
  }

  // What `write` writes when every body and list goes on one line.
  template <typename Write>
  auto Render(const Write& write) -> std::string {
    Output saved = std::exchange(o_, Output{});
    bool was = std::exchange(one_line_, true);
    write();
    one_line_ = was;
    return std::exchange(o_, std::move(saved)).text;
  }

  // --- values -------------------------------------------------------------

  // EXPR: TERM ((+|-) TERM)*; TERM: UNARY ((*|/) UNARY)*.
  auto Expr(size_t k) -> size_t { return Chain(k, TokenKind::Plus, TokenKind::Minus, &Formatter::Term); }
  auto Term(size_t k) -> size_t { return Chain(k, TokenKind::Star, TokenKind::Slash, &Formatter::Unary); }

  auto Chain(size_t k, TokenKind op, TokenKind other_op, size_t (Formatter::*operand)(size_t)) -> size_t {
    k = (this->*operand)(k);
    while (Kind(k) == op || Kind(k) == other_op) {
      Emit(k, " " + std::string(Text(k)) + " ");
      k = (this->*operand)(k + 1);
    }
    return k;
  }

  auto Unary(size_t k) -> size_t {
    for (; Kind(k) == TokenKind::Plus || Kind(k) == TokenKind::Minus; ++k) Emit(k, Text(k));
    k = Primary(k);
    for (; Kind(k) == TokenKind::Dot && k + 1 < tokens_.size(); k += 2) {
      Emit(k, ".");
      Emit(k + 1, Text(k + 1));
    }
    return k;
  }

  auto Primary(size_t k) -> size_t {
    TokenKind kind = Kind(k);
    if (kind == TokenKind::LBracket) return Elements(k);
    if (kind == TokenKind::LParen) {
      Emit(k, "(");
      size_t close = Expr(k + 1);
      Emit(close, ")");
      return close + 1;
    }
    Emit(k, Text(k));
    if (!lex::IsAnyName(kind)) return k + 1;
    if (Kind(k + 1) == TokenKind::LParen) return Elements(k + 1);
    if (Kind(k + 1) == TokenKind::LBrace) {
      Put(" ");
      Body(k + 1);
      return match_[k + 1] + 1;
    }
    return k + 1;
  }

  // `[a, b]` or `(a, b)` of a call: on the line when it fits, else one
  // element a line, each with a comma.
  auto Elements(size_t open) -> size_t {
    size_t close = match_[open];
    std::string_view closer = Kind(open) == TokenKind::LBracket ? "]" : ")";
    if (one_line_ || Fits(open)) {
      Emit(open, Text(open));
      for (size_t k = open + 1; k < close;) {
        if (k > open + 1) Put(", ");
        k = Expr(k);
        if (Kind(k) == TokenKind::Comma) Emit(k++, "");
      }
      Emit(close, closer);
      return close + 1;
    }
    Emit(open, Text(open));
    ++o_.indent;
    int continuation = o_.continuation;
    for (size_t k = open + 1; k < close;) {
      BreakBefore(k, Blank::kNone);
      o_.continuation = 0;
      k = Expr(k);
      if (Kind(k) == TokenKind::Comma) Emit(k++, ",");
      else Put(",");
    }
    BreakBefore(close, Blank::kNone);
    --o_.indent;
    o_.continuation = continuation;
    Emit(close, closer);
    return close + 1;
  }

  // Whether the elements from `open` fit on the rest of the line.
  auto Fits(size_t open) -> bool {
    return Flat(open) && Column() + Render([&] { Elements(open); }).size() <= kWidth;
  }

  // Whether what `open` encloses may go on one line: no record and no comment.
  auto Flat(size_t open) const -> bool {
    size_t close = match_[open];
    for (size_t k = open + 1; k <= close; ++k) {
      if (!gaps_[k].comments.empty() || (k < close && Kind(k) == TokenKind::LBrace)) return false;
    }
    return true;
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  std::vector<Gap> gaps_;      // gaps_[k]: before tokens_[k]; the last: after every token
  std::vector<size_t> match_;  // of an opener its closer, and back
  Output o_;
  bool one_line_ = false;  // rendering a body or list to see whether it fits a line
};

}  // namespace

auto FormatFile(const lex::TokenizedBuffer& tokens) -> std::string { return Formatter(tokens).File(); }

}  // namespace avf::format
