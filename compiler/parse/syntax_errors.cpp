#include "parse/syntax_errors.h"

#include "AvfParser.h"

#include "parse/antlr_tokens.h"

#include "diag/render.h"
#include "lex/lex.h"

namespace avf::parse {

namespace {

using antlrgen::AvfParser;

auto Parent(antlr4::ParserRuleContext* ctx) -> antlr4::ParserRuleContext* {
  return ctx ? dynamic_cast<antlr4::ParserRuleContext*>(ctx->parent) : nullptr;
}

template <typename T>
auto Enclosing(antlr4::ParserRuleContext* ctx) -> T* {
  for (; ctx; ctx = Parent(ctx)) {
    if (auto* t = dynamic_cast<T*>(ctx)) return t;
  }
  return nullptr;
}

// What a `{ ... }` belongs to, for "to close `job pretrain`".
auto BodyOwner(AvfParser::BodyContext* body) -> std::string {
  antlr4::ParserRuleContext* parent = Parent(body);
  if (auto* decl = dynamic_cast<AvfParser::DeclContext*>(parent)) {
    std::string kind = decl->kind ? decl->kind->getText() : "";
    std::string name = decl->name ? decl->name->getText() : "";
    return name.empty() || name == "<missing IDENT>" ? kind : kind + " " + name;
  }
  if (auto* field = dynamic_cast<AvfParser::RecordFieldContext*>(parent)) return field->anyName()->getText();
  if (auto* record = dynamic_cast<AvfParser::RecordExprContext*>(parent)) return record->anyName()->getText();
  return "block";
}

auto AntlrTypeName(size_t type) -> std::string {
  switch (type) {
    case antlr4::Token::EOF: return "end of file";
    case AvfParser::IDENT: return "a name";
    case AvfParser::NUMBER: return "a number";
    case AvfParser::STRING: return "a string";
    case AvfParser::NL: return "a newline";
    default: return std::string(lex::Spelling(KindOfAntlrType(type)));
  }
}

// "`}`", "a name, a number or `(`": at most a handful, in a stable order.
auto DescribeExpected(const antlr4::misc::IntervalSet& expected) -> std::string {
  std::vector<size_t> types;
  bool any_kind_keyword = false;
  for (size_t t : expected.toList()) {
    if (t >= AvfParser::GPU && t <= AvfParser::JOB) {
      any_kind_keyword = true;
      continue;
    }
    types.push_back(t);
  }
  std::vector<std::string> words;
  for (size_t t : types) words.push_back(AntlrTypeName(t));
  if (any_kind_keyword && !Has(expected, AvfParser::IDENT)) words.push_back("a declaration kind");
  if (words.size() > 6) return "a field, a value or a declaration";
  if (words.empty()) return "something else";
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace

auto SyntaxErrorStrategy::OurToken(antlr4::Token* token) const -> const lex::Token& {
  size_t index = token->getTokenIndex();
  const auto& all = tokens_.tokens();
  return index < all.size() ? all[index] : all.back();
}

// An empty closer inserted by the lexer where a bracket was left open.
auto SyntaxErrorStrategy::IsInserted(const lex::Token& t) const -> bool {
  return t.begin == t.end && (t.kind == lex::TokenKind::RBrace || t.kind == lex::TokenKind::RBracket ||
                              t.kind == lex::TokenKind::RParen);
}

auto SyntaxErrorStrategy::DescribeFound(antlr4::Token* token) const -> std::string {
  // An inserted closer is not in the source: describe what follows it.
  const auto& all = tokens_.tokens();
  size_t index = std::min(token->getTokenIndex(), all.size() - 1);
  while (index + 1 < all.size() && IsInserted(all[index])) ++index;
  const lex::Token& t = all[index];
  llvm::StringRef text = tokens_.Text(t);
  switch (t.kind) {
    case lex::TokenKind::EndOfFile: return "end of file";
    case lex::TokenKind::Newline: return "end of line";
    case lex::TokenKind::Identifier: return fmt::format("name `{}`", lex::ShortText(text));
    case lex::TokenKind::Number: return fmt::format("number `{}`", lex::ShortText(text));
    case lex::TokenKind::String: case lex::TokenKind::UnterminatedString:
      return text.size() > 40 ? "a string" : fmt::format("string {}", text.str());
    default: return std::string(lex::Spelling(t.kind));
  }
}

auto SyntaxErrorStrategy::ErrorBetween(size_t first, size_t last) const -> bool {
  auto it = std::lower_bound(error_tokens_.begin(), error_tokens_.end(), first);
  return it != error_tokens_.end() && *it <= last;
}

// End of the last token before the parser's position that is not a newline:
// where a missing `}` or `)` belongs.
auto SyntaxErrorStrategy::PreviousEnd(antlr4::Parser* parser) const -> llvm::SMLoc {
  size_t index = parser->getCurrentToken()->getTokenIndex();
  const auto& all = tokens_.tokens();
  index = std::min(index, all.size() - 1);
  while (index > 0) {
    const lex::Token& t = all[--index];
    if (t.kind != lex::TokenKind::Newline && t.kind != lex::TokenKind::Semi) return tokens_.Loc(t.end);
  }
  return tokens_.Loc(0);
}

void SyntaxErrorStrategy::StopIfTooMany() {
  if (diags_.limit_reached()) throw antlr4::ParseCancellationException("too many errors");
}

// Panic mode for a language of lines: in the loop of a block or of the file,
// a token that cannot start a field or declaration is reported and the rest
// of the field is skipped, so that the next line parses normally.
void SyntaxErrorStrategy::sync(antlr4::Parser* parser) {
  antlr4::ParserRuleContext* ctx = parser->getContext();
  bool in_body = dynamic_cast<AvfParser::BodyContext*>(ctx) != nullptr;
  bool in_file = dynamic_cast<AvfParser::FileContext*>(ctx) != nullptr;
  antlr4::Token* next = parser->getCurrentToken();
  if (!in_body && !in_file) return DefaultErrorStrategy::sync(parser);
  antlr4::misc::IntervalSet expected = parser->getExpectedTokens();
  if (Has(expected, next->getType()) || next->getType() == antlr4::Token::EOF) {
    return DefaultErrorStrategy::sync(parser);
  }
  if (!inErrorRecoveryMode(parser)) {
    beginErrorCondition(parser);
    Report(parser, next, ctx, expected);
  }
  Skip(parser, in_body ? SkipTo::kField : SkipTo::kLineEnd);
}

// After an error inside a rule: skip to the end of the value (inside a block)
// or of the line (a declaration's header, an import).
void SyntaxErrorStrategy::recover(antlr4::Parser* parser, std::exception_ptr) {
  antlr4::TokenStream* input = parser->getTokenStream();
  // Failsafe as in ANTLR: a second error at the same token and state consumes one.
  if (lastErrorIndex == static_cast<int>(input->index()) && lastErrorStates.contains(parser->getState())) {
    parser->consume();
  }
  lastErrorIndex = static_cast<int>(input->index());
  lastErrorStates.add(parser->getState());
  bool in_body = Enclosing<AvfParser::BodyContext>(parser->getContext()) != nullptr;
  Skip(parser, in_body ? SkipTo::kValue : SkipTo::kLineEnd);
}

void SyntaxErrorStrategy::Skip(antlr4::Parser* parser, SkipTo to) {
  size_t depth = 0;
  for (;;) {
    size_t type = parser->getCurrentToken()->getType();
    if (type == antlr4::Token::EOF) return;
    bool opener = type == AvfParser::LBRACE || type == AvfParser::LBRACKET || type == AvfParser::LPAREN;
    bool closer = type == AvfParser::RBRACE || type == AvfParser::RBRACKET || type == AvfParser::RPAREN;
    if (depth == 0) {
      if (type == AvfParser::NL || type == AvfParser::SEMI) return;
      if (to == SkipTo::kField && type == AvfParser::RBRACE) return;
      if (to == SkipTo::kValue && closer) return;
    }
    if (opener) ++depth;
    if (closer && depth > 0) --depth;
    parser->consume();
  }
}

// Never delete a separator or a closer to make the input fit: `b = ; c = 1`
// must not read as `b = c`.
auto SyntaxErrorStrategy::singleTokenDeletion(antlr4::Parser* parser) -> antlr4::Token* {
  size_t type = parser->getCurrentToken()->getType();
  if (type == AvfParser::NL || type == AvfParser::SEMI || type == AvfParser::RBRACE || type == antlr4::Token::EOF ||
      IsInserted(OurToken(parser->getCurrentToken()))) {
    return nullptr;
  }
  return DefaultErrorStrategy::singleTokenDeletion(parser);
}

void SyntaxErrorStrategy::reportNoViableAlternative(antlr4::Parser* parser,
                                                    const antlr4::NoViableAltException& e) {
  Report(parser, e.getOffendingToken(), dynamic_cast<antlr4::ParserRuleContext*>(e.getCtx()),
         parser->getExpectedTokens());
}

void SyntaxErrorStrategy::reportInputMismatch(antlr4::Parser* parser,
                                              const antlr4::InputMismatchException& e) {
  Report(parser, e.getOffendingToken(), parser->getContext(), e.getExpectedTokens());
}

void SyntaxErrorStrategy::reportFailedPredicate(antlr4::Parser* parser,
                                                const antlr4::FailedPredicateException& e) {
  Report(parser, e.getOffendingToken(), parser->getContext(), parser->getExpectedTokens());
}

void SyntaxErrorStrategy::reportUnwantedToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  Report(parser, parser->getCurrentToken(), parser->getContext(), getExpectedTokens(parser));
}

void SyntaxErrorStrategy::reportMissingToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  Report(parser, parser->getCurrentToken(), parser->getContext(), getExpectedTokens(parser));
}

void SyntaxErrorStrategy::Report(antlr4::Parser* parser, antlr4::Token* offending,
                                 antlr4::ParserRuleContext* ctx,
                                 const antlr4::misc::IntervalSet& expected) {
  size_t index = offending->getTokenIndex();
  error_tokens_.insert(std::upper_bound(error_tokens_.begin(), error_tokens_.end(), index), index);
  if (!TryUnclosed(parser, offending, ctx, expected)) ReportGeneric(offending, ctx, expected);
  StopIfTooMany();
}

// "12:1" for an opening bracket, counted in the buffer itself.
auto SyntaxErrorStrategy::LineColumn(uint32_t offset) const -> std::string {
  llvm::StringRef before = tokens_.source().substr(0, offset);
  size_t line = before.count('\n') + 1;
  size_t line_start = before.rfind('\n');
  size_t column = line_start == llvm::StringRef::npos ? offset + 1 : offset - line_start;
  return fmt::format("{}:{}", line, column);
}

// End of file, or a closer of another kind, where a bracket is still open:
// name the opener and where it is.
auto SyntaxErrorStrategy::TryUnclosed(antlr4::Parser* parser, antlr4::Token* offending,
                                      antlr4::ParserRuleContext* ctx,
                                      const antlr4::misc::IntervalSet& expected) -> bool {
  const lex::Token& found = OurToken(offending);
  bool at_end = found.kind == lex::TokenKind::EndOfFile;
  bool at_closer = found.kind == lex::TokenKind::RBrace || found.kind == lex::TokenKind::RBracket ||
                   found.kind == lex::TokenKind::RParen;
  if (!at_end && !at_closer) return false;
  llvm::SMLoc where = PreviousEnd(parser);
  llvm::SMRange here{where, where};
  if (Has(expected, AvfParser::RBRACE) && (at_end || found.kind != lex::TokenKind::RBrace)) {
    auto* body = Enclosing<AvfParser::BodyContext>(ctx);
    if (!body || !at_end) return false;
    const lex::Token& open = OurToken(body->getStart());
    std::string owner = BodyOwner(body);
    std::string at = LineColumn(open.begin);
    auto [line, column] = llvm::StringRef(at).split(':');
    diags_.Report(diag::DiagId::UnclosedBlock, here, owner, line.str(), column.str())
        .Note(tokens_.Range(open), fmt::format("`{}` opened here", owner))
        .Fix(here, "}");
    return true;
  }
  for (auto [closer, opener_kind] : {std::pair{AvfParser::RBRACKET, lex::TokenKind::LBracket},
                                     std::pair{AvfParser::RPAREN, lex::TokenKind::LParen}}) {
    if (!Has(expected, closer)) continue;
    antlr4::ParserRuleContext* c = ctx;
    for (; c; c = Parent(c)) {
      if (OurToken(c->getStart()).kind == opener_kind &&
          (dynamic_cast<AvfParser::ListExprContext*>(c) || dynamic_cast<AvfParser::ParenExprContext*>(c))) {
        break;
      }
      if (auto* call = dynamic_cast<AvfParser::CallExprContext*>(c)) {
        if (opener_kind == lex::TokenKind::LParen) break;
        (void)call;
      }
    }
    if (!c) continue;
    const lex::Token* open = &OurToken(c->getStart());
    if (auto* call = dynamic_cast<AvfParser::CallExprContext*>(c)) open = &OurToken(call->LPAREN()->getSymbol());
    std::string at = LineColumn(open->begin);
    auto [line, column] = llvm::StringRef(at).split(':');
    std::string close_text = closer == AvfParser::RBRACKET ? "]" : ")";
    std::string open_text = closer == AvfParser::RBRACKET ? "[" : "(";
    diags_.Report(diag::DiagId::UnclosedBracket, here, close_text, open_text, line.str(), column.str())
        .Note(tokens_.Range(*open), fmt::format("`{}` opened here", open_text))
        .Fix(here, close_text);
    return true;
  }
  return false;
}

auto SyntaxErrorStrategy::LastFieldName(antlr4::ParserRuleContext* ctx) const -> std::string {
  auto* body = dynamic_cast<AvfParser::BodyContext*>(ctx);
  if (!body || body->field().empty()) return "";
  AvfParser::FieldContext* field = body->field().back();
  return field->children.empty() ? "" : lex::ShortText(field->children.front()->getText());
}

void SyntaxErrorStrategy::ReportGeneric(antlr4::Token* offending, antlr4::ParserRuleContext* ctx,
                                        const antlr4::misc::IntervalSet& expected) {
  const lex::Token& found = OurToken(offending);
  const auto& all = tokens_.tokens();
  size_t index = std::min(offending->getTokenIndex(), all.size() - 1);
  const lex::Token* before = index > 0 ? &all[index - 1] : nullptr;
  llvm::SMRange range = tokens_.Range(found);
  std::string what = DescribeFound(offending);
  if (dynamic_cast<AvfParser::FileContext*>(ctx) || dynamic_cast<AvfParser::ItemContext*>(ctx)) {
    diags_.Report(diag::DiagId::ExpectedDeclaration, range, what);
    return;
  }
  if (auto* decl = dynamic_cast<AvfParser::DeclContext*>(ctx); decl && Has(expected, AvfParser::IDENT) &&
                                                               !Has(expected, AvfParser::LBRACE)) {
    ReportDeclHeader(decl, found, before, what);
    return;
  }
  if (dynamic_cast<AvfParser::ImportDeclContext*>(ctx)) {
    diags_.Report(diag::DiagId::UnexpectedToken, range, what, DescribeExpected(expected))
        .Help("write the path in double quotes: `import \"std/hardware\"`");
    return;
  }
  if (Has(expected, AvfParser::NUMBER) && Has(expected, AvfParser::STRING)) {
    diags_.Report(diag::DiagId::ExpectedExpression, range, what);
    return;
  }
  if (dynamic_cast<AvfParser::BodyContext*>(ctx) && Has(expected, AvfParser::IDENT)) {
    std::string field = LastFieldName(ctx);
    bool after_value = before && before->kind != lex::TokenKind::Newline && before->kind != lex::TokenKind::Semi &&
                       before->kind != lex::TokenKind::LBrace && !field.empty();
    if (after_value) {
      diags_.Report(diag::DiagId::UnexpectedToken, range, what,
                    fmt::format("a newline or `;` after the value of `{}`", field));
    } else {
      diags_.Report(diag::DiagId::ExpectedField, range, what);
    }
    return;
  }
  diags_.Report(diag::DiagId::UnexpectedToken, range, what, DescribeExpected(expected));
}

// `job {`, `gpu a : {`, and `memory = 80GB` outside of any block.
void SyntaxErrorStrategy::ReportDeclHeader(antlr4::ParserRuleContext* ctx, const lex::Token& found,
                                           const lex::Token* before, const std::string& what) {
  auto* decl = dynamic_cast<AvfParser::DeclContext*>(ctx);
  std::string kind = decl->kind ? lex::ShortText(decl->kind->getText()) : "kind";
  if (found.kind == lex::TokenKind::Assign && before && before->kind != lex::TokenKind::Colon) {
    diags_.Report(diag::DiagId::ExpectedDeclaration, tokens_.Range(*before), fmt::format("the field `{} =`", kind))
        .Help("fields belong inside a declaration's `{ ... }`; was the block closed too early?");
    return;
  }
  if (before && before->kind == lex::TokenKind::Colon) kind = ":";
  diags_.Report(diag::DiagId::ExpectedDeclName, tokens_.Range(found), kind, what);
}

}  // namespace avf::parse
