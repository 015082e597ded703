#include "parse/syntax_errors.h"

#include "AvfParser.h"

#include "parse/antlr_tokens.h"

#include "diag/render.h"

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

auto SyntaxErrorStrategy::DescribeFound(antlr4::Token* token) const -> std::string {
  const lex::Token& t = OurToken(token);
  llvm::StringRef text = tokens_.Text(t);
  switch (t.kind) {
    case lex::TokenKind::EndOfFile: return "end of file";
    case lex::TokenKind::Newline: return "end of line";
    case lex::TokenKind::Identifier: return fmt::format("name `{}`", text.str());
    case lex::TokenKind::Number: return fmt::format("number `{}`", text.str());
    case lex::TokenKind::String:
      return text.size() > 40 ? "a string" : fmt::format("string {}", text.str());
    default: return std::string(lex::Spelling(t.kind));
  }
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

void SyntaxErrorStrategy::ReportGeneric(antlr4::Token* offending, antlr4::ParserRuleContext* ctx,
                                        const antlr4::misc::IntervalSet& expected) {
  const lex::Token& found = OurToken(offending);
  llvm::SMRange range = tokens_.Range(found);
  if (range.Start == range.End) range.End = range.Start;
  std::string what = DescribeFound(offending);
  if (dynamic_cast<AvfParser::FileContext*>(ctx) || dynamic_cast<AvfParser::ItemContext*>(ctx)) {
    diags_.Report(diag::DiagId::ExpectedDeclaration, range, what);
    return;
  }
  if (auto* decl = dynamic_cast<AvfParser::DeclContext*>(ctx); decl && Has(expected, AvfParser::IDENT) &&
                                                               !Has(expected, AvfParser::LBRACE)) {
    diags_.Report(diag::DiagId::ExpectedDeclName, range, decl->kind ? decl->kind->getText() : "kind", what);
    return;
  }
  if (Has(expected, AvfParser::NUMBER) && Has(expected, AvfParser::STRING)) {
    diags_.Report(diag::DiagId::ExpectedExpression, range, what);
    return;
  }
  if (dynamic_cast<AvfParser::BodyContext*>(ctx) && Has(expected, AvfParser::IDENT)) {
    diags_.Report(diag::DiagId::ExpectedField, range, what);
    return;
  }
  diags_.Report(diag::DiagId::UnexpectedToken, range, what, DescribeExpected(expected));
}

}  // namespace avf::parse
