// Pass 2 of the lexer: newlines that cannot end a field are dropped and
// brackets are balanced, so the parser meets a clean token stream (lex.h).
#include "lex/layout.h"

#include <algorithm>

#include <fmt/format.h>

#include "lex/lex.h"
#include "lex/token_classes.h"

namespace avf::lex {

// A class only so that it may fill the private members of TokenizedBuffer.
class Layout {
 public:
  Layout(TokenizedBuffer& out, const llvm::SourceMgr& sm, diag::DiagnosticEngine& diags,
         const std::vector<uint32_t>& dropped)
      : out_(out), sm_(sm), diags_(diags), dropped_(dropped) {}

  void Run(const std::vector<Token>& raw) {
    out_.tokens_.reserve(raw.size() + 1);
    for (size_t i = 0; i < raw.size(); ++i) {
      const Token& t = raw[i];
      if (t.kind == TokenKind::Newline) {
        PushNewline(raw, i);
        continue;
      }
      if (IsCloser(t.kind)) {
        Close(t.kind);
      } else if (IsOpener(t.kind)) {
        Open(t);
      } else if (!open_.empty() && StartsDeclaration(raw, i)) {
        CloseAbove(0);  // a declaration cannot be inside a block
      }
      out_.tokens_.push_back(t);
    }
    CloseAbove(0);  // at the end of the file
  }

 private:
  struct OpenBracket {
    Token token;
    size_t index;  // of the opener in out_.tokens_
  };

  void Error(const diag::DiagnosticBuilder&) { out_.has_errors_ = true; }

  // Inside `(` or `[` a newline continues the value, unless the next line
  // starts a field (`NAME =`): then the bracket was left open.
  void PushNewline(const std::vector<Token>& raw, size_t i) {
    if (!open_.empty() && open_.back().token.kind != TokenKind::LBrace) {
      bool next_is_field = i + 2 < raw.size() && IsAnyName(raw[i + 1].kind) && raw[i + 2].kind == TokenKind::Assign;
      if (!next_is_field) return;
      size_t keep = open_.size();
      while (keep > 0 && open_[keep - 1].token.kind != TokenKind::LBrace) --keep;
      CloseAbove(keep);
    }
    if (out_.tokens_.empty()) return;
    // `x = @`: the newline still ends the field, so that the next line is not
    // read as the value.
    if (ContinuesOnNextLine(out_.tokens_.back().kind) && !DroppedBetween(out_.tokens_.back().end, raw[i].begin)) {
      return;
    }
    out_.tokens_.push_back(raw[i]);
  }

  auto DroppedBetween(uint32_t begin, uint32_t end) const -> bool {
    auto it = std::lower_bound(dropped_.begin(), dropped_.end(), begin);
    return it != dropped_.end() && *it < end;
  }

  // `KIND NAME {` or `KIND NAME :` first on its line, inside a block: the
  // block was not closed. An unknown kind counts only in the first column.
  auto StartsDeclaration(const std::vector<Token>& raw, size_t i) const -> bool {
    const Token& t = raw[i];
    if (!IsAnyName(t.kind) || i == 0 || raw[i - 1].kind != TokenKind::Newline) return false;
    if (i + 2 >= raw.size() || raw[i + 1].kind != TokenKind::Identifier) return false;
    if (raw[i + 2].kind != TokenKind::LBrace && raw[i + 2].kind != TokenKind::Colon) return false;
    return IsKindKeyword(t.kind) || ColumnOf(t.begin) == 1;
  }

  void Open(const Token& t) {
    open_.push_back({t, out_.tokens_.size()});
    if (open_.size() == kMaxNesting + 1 && out_.parseable_) {
      out_.parseable_ = false;
      Error(diags_.Report(diag::DiagId::NestingTooDeep, out_.Range(t), kMaxNesting));
    }
  }

  // A closer ends its opener and every bracket opened after it; one with no
  // opener is left for the parser to report.
  void Close(TokenKind closer) {
    TokenKind opener = OpenerOf(closer);
    for (size_t i = open_.size(); i > 0; --i) {
      if (open_[i - 1].token.kind == opener) {
        CloseAbove(i);
        open_.pop_back();
        return;
      }
    }
  }

  // Closes open_[keep..] with inserted (empty) closers after the last token,
  // reporting the innermost one: the parser then sees balanced brackets.
  void CloseAbove(size_t keep) {
    if (open_.size() <= keep) return;
    auto& tokens = out_.tokens_;
    size_t at = tokens.size();
    while (at > 0 && (tokens[at - 1].kind == TokenKind::Newline || tokens[at - 1].kind == TokenKind::Semi)) --at;
    uint32_t offset = tokens[at - 1].end;
    ReportUnclosed(open_.back(), offset);
    std::vector<Token> closers;
    for (size_t i = open_.size(); i > keep; --i) closers.push_back({CloserOf(open_[i - 1].token.kind), offset, offset});
    tokens.insert(tokens.begin() + static_cast<ptrdiff_t>(at), closers.begin(), closers.end());
    open_.resize(keep);
  }

  void ReportUnclosed(const OpenBracket& open, uint32_t offset) {
    if (!out_.parseable_) return;  // nested too deep: nothing more to say
    llvm::SMRange here{out_.Loc(offset), out_.Loc(offset)};
    if (open.token.kind == TokenKind::LBrace) {
      // Named by what the block belongs to, and located where that starts.
      auto [owner, first] = BraceOwner(open.index);
      uint32_t begin = out_.tokens_[first].begin;
      Error(diags_.Report(diag::DiagId::UnclosedBlock, here, owner, LineOf(begin), ColumnOf(begin))
                .Note({out_.Loc(begin), out_.Loc(open.token.end)}, fmt::format("`{}` opened here", owner))
                .Fix(here, "}"));
      return;
    }
    std::string_view close = open.token.kind == TokenKind::LBracket ? "]" : ")";
    std::string_view opened = open.token.kind == TokenKind::LBracket ? "[" : "(";
    Error(diags_
              .Report(diag::DiagId::UnclosedBracket, here, close, opened, LineOf(open.token.begin),
                      ColumnOf(open.token.begin))
              .Note(out_.Range(open.token), fmt::format("`{}` opened here", opened))
              .Fix(here, std::string(close)));
  }

  // What a `{` at tokens[index] belongs to, and the index of its first token:
  // `job pretrain` (KIND NAME [: BASE] {), or the field or record type before
  // it (`parallel`, `fat_tree`).
  auto BraceOwner(size_t index) const -> std::pair<std::string, size_t> {
    const auto& t = out_.tokens_;
    auto text = [&](size_t k) { return diag::ShortText(out_.Text(t[k])); };
    if (index >= 4 && t[index - 2].kind == TokenKind::Colon && t[index - 1].kind == TokenKind::Identifier &&
        t[index - 3].kind == TokenKind::Identifier && IsAnyName(t[index - 4].kind)) {
      return {text(index - 4) + " " + text(index - 3), index - 4};
    }
    if (index >= 2 && t[index - 1].kind == TokenKind::Identifier && IsAnyName(t[index - 2].kind)) {
      return {text(index - 2) + " " + text(index - 1), index - 2};
    }
    if (index >= 1 && IsAnyName(t[index - 1].kind)) return {text(index - 1), index - 1};
    return {"block", index};
  }

  auto LineOf(uint32_t offset) const -> unsigned {
    return sm_.getLineAndColumn(out_.Loc(offset), out_.buffer_id()).first;
  }
  auto ColumnOf(uint32_t offset) const -> unsigned {
    return sm_.getLineAndColumn(out_.Loc(offset), out_.buffer_id()).second;
  }

  TokenizedBuffer& out_;
  const llvm::SourceMgr& sm_;
  diag::DiagnosticEngine& diags_;
  const std::vector<uint32_t>& dropped_;  // offsets of the characters the scan reported and dropped
  std::vector<OpenBracket> open_;
};

void LayOut(TokenizedBuffer& out, const llvm::SourceMgr& sm, diag::DiagnosticEngine& diags,
            const std::vector<uint32_t>& dropped, const std::vector<Token>& raw) {
  Layout(out, sm, diags, dropped).Run(raw);
}

}  // namespace avf::lex
