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

// After these tokens only a value can follow.
auto IsValuePosition(lex::TokenKind kind) -> bool {
  switch (kind) {
    case lex::TokenKind::Comma:
    case lex::TokenKind::Assign:
    case lex::TokenKind::LParen:
    case lex::TokenKind::LBracket:
    case lex::TokenKind::Plus:
    case lex::TokenKind::Minus:
    case lex::TokenKind::Star:
    case lex::TokenKind::Slash: return true;
    default: return false;
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

// The field just parsed in a block: its last child. (Only that one: a block
// after many errors has very many children, and this runs at each error.)
auto LastField(antlr4::ParserRuleContext* ctx) -> AvfParser::FieldContext* {
  auto* body = dynamic_cast<AvfParser::BodyContext*>(ctx);
  return body && !body->children.empty() ? dynamic_cast<AvfParser::FieldContext*>(body->children.back()) : nullptr;
}

}  // namespace

auto SyntaxErrorStrategy::OurToken(antlr4::Token* token) const -> const lex::Token& {
  return parse::OurToken(tokens_, first_, token);
}

auto SyntaxErrorStrategy::Index(antlr4::Token* token) const -> size_t { return OurIndex(tokens_, first_, token); }

auto SyntaxErrorStrategy::DescribeFound(antlr4::Token* token) const -> std::string {
  // An inserted closer is not in the source: describe what follows it.
  const auto& all = tokens_.tokens();
  size_t index = Index(token);
  while (index + 1 < all.size() && lex::TokenizedBuffer::IsInserted(all[index])) ++index;
  const lex::Token& t = all[index];
  llvm::StringRef text = tokens_.Text(t);
  switch (t.kind) {
    case lex::TokenKind::EndOfFile: return "end of file";
    case lex::TokenKind::Newline: return "end of line";
    case lex::TokenKind::Identifier: return fmt::format("name `{}`", diag::ShortText(text));
    case lex::TokenKind::Number: return fmt::format("number `{}`", diag::ShortText(text));
    case lex::TokenKind::String:
    case lex::TokenKind::UnterminatedString:
      return text.size() > 40 ? "a string" : fmt::format("string {}", text.str());
    default: return std::string(lex::Spelling(t.kind));
  }
}

auto SyntaxErrorStrategy::ErrorBetween(size_t first, size_t last) const -> bool {
  auto it = std::lower_bound(error_tokens_.begin(), error_tokens_.end(), first);
  return it != error_tokens_.end() && *it <= last;
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

// Never delete a separator, an opener or a `}` to make the input fit:
// `b = ; c = 1` must not read as `b = c`, nor `job { gpus = 8 }` as a job
// named `gpus`.
auto SyntaxErrorStrategy::singleTokenDeletion(antlr4::Parser* parser) -> antlr4::Token* {
  size_t type = parser->getCurrentToken()->getType();
  if (type == AvfParser::NL || type == AvfParser::SEMI || type == AvfParser::RBRACE || type == antlr4::Token::EOF ||
      type == AvfParser::LBRACE || type == AvfParser::LBRACKET || type == AvfParser::LPAREN ||
      lex::TokenizedBuffer::IsInserted(OurToken(parser->getCurrentToken()))) {
    return nullptr;
  }
  return DefaultErrorStrategy::singleTokenDeletion(parser);
}

void SyntaxErrorStrategy::reportNoViableAlternative(antlr4::Parser* parser, const antlr4::NoViableAltException& e) {
  auto* ctx = dynamic_cast<antlr4::ParserRuleContext*>(e.getCtx());
  // `x: 5` or `x 5`: the name was read while choosing between `x = ...` and
  // `x { ... }`, so what is expected is what follows a field's name.
  if (dynamic_cast<AvfParser::FieldContext*>(ctx) && e.getOffendingToken() != e.getStartToken()) {
    antlr4::misc::IntervalSet after_name;
    after_name.add(AvfParser::ASSIGN);
    after_name.add(AvfParser::LBRACE);
    Report(parser, e.getOffendingToken(), ctx, after_name);
    return;
  }
  Report(parser, e.getOffendingToken(), ctx, parser->getExpectedTokens());
}

// An import takes exactly a string: do not conjure one and read the path as
// a declaration.
auto SyntaxErrorStrategy::singleTokenInsertion(antlr4::Parser* parser) -> bool {
  if (dynamic_cast<AvfParser::ImportDeclContext*>(parser->getContext())) return false;
  return DefaultErrorStrategy::singleTokenInsertion(parser);
}

void SyntaxErrorStrategy::reportInputMismatch(antlr4::Parser* parser, const antlr4::InputMismatchException& e) {
  Report(parser, e.getOffendingToken(), parser->getContext(), e.getExpectedTokens());
}

void SyntaxErrorStrategy::reportFailedPredicate(antlr4::Parser* parser, const antlr4::FailedPredicateException& e) {
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

void SyntaxErrorStrategy::Report(antlr4::Parser* parser, antlr4::Token* offending, antlr4::ParserRuleContext* ctx,
                                 const antlr4::misc::IntervalSet& expected) {
  size_t index = offending->getTokenIndex();
  error_tokens_.insert(std::upper_bound(error_tokens_.begin(), error_tokens_.end(), index), index);
  // Past the error limit parsing goes on (the engine counts what it does not
  // keep), so that "N more errors not shown" covers the whole file.
  ReportGeneric(offending, ctx, expected);
}

auto SyntaxErrorStrategy::LastFieldName(antlr4::ParserRuleContext* ctx) const -> std::string {
  AvfParser::FieldContext* field = LastField(ctx);
  return !field || field->children.empty() ? "" : diag::ShortText(field->children.front()->getText());
}

// The last field of a block is `NAME =` at the end of a line, its value on the next.
auto SyntaxErrorStrategy::ValueOnNextLine(antlr4::ParserRuleContext* ctx) const -> bool {
  auto* assign = dynamic_cast<AvfParser::AssignFieldContext*>(LastField(ctx));
  if (!assign || !assign->ASSIGN() || !assign->expr()) return false;
  uint32_t from = OurToken(assign->ASSIGN()->getSymbol()).end;
  uint32_t to = OurToken(assign->expr()->getStart()).begin;
  return to > from && tokens_.source().slice(from, to).contains('\n');
}

void SyntaxErrorStrategy::ReportGeneric(antlr4::Token* offending, antlr4::ParserRuleContext* ctx,
                                        const antlr4::misc::IntervalSet& expected) {
  const lex::Token& found = OurToken(offending);
  const auto& all = tokens_.tokens();
  size_t index = Index(offending);
  const lex::Token* before = index > 0 ? &all[index - 1] : nullptr;
  llvm::SMRange range = tokens_.Range(found);
  std::string what = DescribeFound(offending);
  if (dynamic_cast<AvfParser::FileContext*>(ctx) || dynamic_cast<AvfParser::ItemContext*>(ctx)) {
    diags_.Report(diag::DiagId::ExpectedDeclaration, range, what);
    return;
  }
  if (auto* decl = dynamic_cast<AvfParser::DeclContext*>(ctx);
      decl && Has(expected, AvfParser::IDENT) && !Has(expected, AvfParser::LBRACE)) {
    ReportDeclHeader(decl, found, before, what);
    return;
  }
  if (dynamic_cast<AvfParser::ImportDeclContext*>(ctx)) {
    diags_.Report(diag::DiagId::UnexpectedToken, range, what, DescribeExpected(expected))
        .Help("write the path in double quotes: `import \"std/hardware\"`");
    return;
  }
  if (found.kind == lex::TokenKind::Colon && Has(expected, AvfParser::ASSIGN)) {
    // `gpus: 8` or `parallel: { ... }`
    bool block = index + 1 < all.size() && all[index + 1].kind == lex::TokenKind::LBrace;
    auto b = diags_.Report(diag::DiagId::UnexpectedToken, range, what, DescribeExpected(expected));
    if (block) b.Help("a block of fields is written `NAME { ... }`, without `:`").Fix(range, "");
    else b.Help("fields are written `NAME = VALUE`").Fix(range, "=");
    return;
  }
  if (Has(expected, AvfParser::NUMBER) && Has(expected, AvfParser::STRING)) {
    diags_.Report(diag::DiagId::ExpectedExpression, range, what);
    return;
  }
  if (dynamic_cast<AvfParser::BodyContext*>(ctx) && Has(expected, AvfParser::IDENT)) {
    ReportInBlock(ctx, range, before, what);
    return;
  }
  if (before && IsValuePosition(before->kind)) {
    // `[1, , 2]`: ANTLR's choice between alternatives failed a token late,
    // and what it expected was the `,`; a value is what belongs here.
    diags_.Report(diag::DiagId::ExpectedExpression, range, what);
    return;
  }
  diags_.Report(diag::DiagId::UnexpectedToken, range, what, DescribeExpected(expected));
}

// Where a block's next field should start: after a value on the same line
// (`steps = 1 2`), or at the start of a field (`= 8`).
void SyntaxErrorStrategy::ReportInBlock(antlr4::ParserRuleContext* ctx, llvm::SMRange range, const lex::Token* before,
                                        const std::string& what) {
  std::string field = LastFieldName(ctx);
  bool after_value = before && before->kind != lex::TokenKind::Newline && before->kind != lex::TokenKind::Semi &&
                     before->kind != lex::TokenKind::LBrace && !field.empty();
  if (!after_value) {
    diags_.Report(diag::DiagId::ExpectedField, range, what);
    return;
  }
  auto b = diags_.Report(diag::DiagId::UnexpectedToken, range, what,
                         fmt::format("a newline or `;` after the value of `{}`", field));
  if (ValueOnNextLine(ctx)) {
    b.Help(fmt::format("a line that ends with `=` continues on the next line; is the value of `{}` missing?", field));
  }
}

// `job {`, `gpu a : {`, and `memory = 80GB` outside of any block.
void SyntaxErrorStrategy::ReportDeclHeader(antlr4::ParserRuleContext* ctx, const lex::Token& found,
                                           const lex::Token* before, const std::string& what) {
  auto* decl = dynamic_cast<AvfParser::DeclContext*>(ctx);
  std::string kind = decl->kind ? diag::ShortText(decl->kind->getText()) : "kind";
  if (found.kind == lex::TokenKind::Assign && before && before->kind != lex::TokenKind::Colon) {
    diags_.Report(diag::DiagId::ExpectedDeclaration, tokens_.Range(*before), fmt::format("the field `{} =`", kind))
        .Help("fields belong inside a declaration's `{ ... }`; was the block closed too early?");
    return;
  }
  bool after_colon = before && before->kind == lex::TokenKind::Colon;
  auto b =
      diags_.Report(diag::DiagId::ExpectedDeclName, tokens_.Range(found), after_colon ? std::string(":") : kind, what);
  if (found.kind == lex::TokenKind::Number) b.Help("a name starts with a letter or `_`");
}

}  // namespace avf::parse
