// Parses with the descent parser and, where it meets a syntax error, runs the
// ANTLR parser over the lexer's tokens for its recovery and messages,
// converting the parse tree into ast::File right here, so later phases never
// see ANTLR.
#include "AvfLexer.h"
#include "AvfParser.h"
#include "antlr4-runtime.h"  // first: it #undefs EOF

#include "parse/parse.h"

#include "lex/lex.h"
#include "parse/antlr_tokens.h"
#include "parse/ast_reports.h"
#include "parse/descent.h"
#include "parse/syntax_errors.h"

namespace avf::parse {

namespace {

using antlrgen::AvfLexer;
using antlrgen::AvfParser;

// Feeds our tokens to the ANTLR parser: start/stop are byte offsets and the
// token index equals the index into TokenizedBuffer::tokens(). Tokens name
// this source so that ANTLR's recovery can conjure missing tokens.
class OurTokenSource : public antlr4::TokenSource {
 public:
  explicit OurTokenSource(const lex::TokenizedBuffer& tokens) : tokens_(tokens) {}

  auto nextToken() -> std::unique_ptr<antlr4::Token> override {
    const auto& all = tokens_.tokens();
    const lex::Token& t = all[std::min(next_, all.size() - 1)];
    if (next_ < all.size()) ++next_;
    // The lexer reported an unterminated string; the parser reads a string.
    size_t type =
        t.kind == lex::TokenKind::UnterminatedString ? static_cast<size_t>(AvfLexer::STRING) : AntlrType(t.kind);
    auto token = std::make_unique<antlr4::CommonToken>(
        std::pair<antlr4::TokenSource*, antlr4::CharStream*>{this, nullptr}, type, antlr4::Token::DEFAULT_CHANNEL,
        t.begin, t.end == t.begin ? t.begin : t.end - 1);
    token->setText(tokens_.Text(t).str());
    return token;
  }
  auto getLine() const -> size_t override { return 0; }
  auto getCharPositionInLine() -> size_t override { return 0; }
  auto getInputStream() -> antlr4::CharStream* override { return nullptr; }
  auto getSourceName() -> std::string override { return "avf"; }
  auto getTokenFactory() -> antlr4::TokenFactory<antlr4::CommonToken>* override { return factory_; }

 private:
  const lex::TokenizedBuffer& tokens_;
  size_t next_ = 0;
  antlr4::TokenFactory<antlr4::CommonToken>* factory_ = antlr4::CommonTokenFactory::DEFAULT.get();
};

// Converts parse-tree contexts into AST nodes.
class AstBuilder {
 public:
  AstBuilder(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags, const SyntaxErrorStrategy& errors)
      : tokens_(tokens), diags_(diags), errors_(errors) {}

  // file : (item | sep)* EOF ;   item : importDecl | decl ;
  auto BuildFile(AvfParser::FileContext* ctx) -> ast::File {
    ast::File file;
    file.buffer_id = tokens_.buffer_id();
    for (AvfParser::ItemContext* item : ctx->item()) {
      if (auto* imp = item->importDecl()) {
        if (!imp->STRING() || imp->STRING()->getSymbol()->getTokenIndex() >= tokens_.tokens().size()) continue;
        if (!file.decls.empty()) diags_.Report(diag::DiagId::ImportNotAtTop, Range(imp));
        const lex::Token& t = Tok(imp->STRING()->getSymbol());
        file.imports.push_back({StringValue(t), tokens_.Range(t), Range(imp)});
      } else if (auto* decl = item->decl()) {
        if (auto d = BuildDecl(decl)) file.decls.push_back(std::move(*d));
      }
    }
    file.saved_text = std::move(saved_text_);
    return file;
  }

 private:
  auto Tok(antlr4::Token* t) const -> const lex::Token& { return OurToken(tokens_, t); }

  auto StringValue(const lex::Token& t) const -> std::string { return parse::StringValue(tokens_, t); }

  auto Range(antlr4::ParserRuleContext* ctx) const -> llvm::SMRange {
    llvm::SMLoc begin = tokens_.Loc(Tok(ctx->getStart()).begin);
    antlr4::Token* stop = ctx->getStop();
    if (!stop || stop->getTokenIndex() < ctx->getStart()->getTokenIndex()) return {begin, begin};
    return {begin, tokens_.Loc(Tok(stop).end)};
  }

  // A name's text is a view of the source, or, where ANTLR's recovery made
  // the text up, of the file's saved text.
  auto MakeName(antlr4::ParserRuleContext* ctx) -> ast::Name {
    std::string text = ctx->getText();
    llvm::StringRef source = tokens_.Text(Tok(ctx->getStart()));
    if (IsReal(ctx->getStart()) && source == text) return {source, Range(ctx)};
    saved_text_.push_front(std::move(text));
    return {saved_text_.front(), Range(ctx)};
  }
  auto MakeName(antlr4::Token* t) const -> ast::Name {
    const lex::Token& tok = Tok(t);
    return {tokens_.Text(tok), tokens_.Range(tok)};
  }

  // Missing tokens conjured by ANTLR's recovery have no place in the source.
  static auto IsReal(antlr4::Token* t) -> bool { return t && t->getTokenIndex() != INVALID_INDEX; }

  // decl : kind=anyName name=IDENT (COLON base=IDENT)? body ;
  auto BuildDecl(AvfParser::DeclContext* ctx) -> std::optional<ast::Decl> {
    if (!ctx->kind || !IsReal(ctx->name) || !ctx->body()) return std::nullopt;
    ast::Decl decl;
    decl.keyword = MakeName(ctx->kind);
    decl.kind = ast::DeclKindFromKeyword(decl.keyword.text);
    if (!decl.kind) ReportUnknownDeclKind(diags_, decl.keyword);
    decl.name = MakeName(ctx->name);
    if (IsReal(ctx->base)) decl.base = MakeName(ctx->base);
    decl.body = BuildBody(ctx->body());
    decl.range = Range(ctx);
    return decl;
  }

  // body : LBRACE (field | sep)* RBRACE ;
  auto BuildBody(AvfParser::BodyContext* ctx) -> ast::Body {
    ast::Body body;
    body.range = Range(ctx);
    AvfParser::FieldContext* previous = nullptr;
    for (AvfParser::FieldContext* f : ctx->field()) {
      if (previous) CheckSeparated(previous, f);
      previous = f;
      if (auto field = BuildField(f)) body.fields.push_back(std::move(*field));
    }
    return body;
  }

  // Two fields with no newline or `;` between them: `a = 1 b = 2`.
  void CheckSeparated(AvfParser::FieldContext* previous, AvfParser::FieldContext* next) {
    antlr4::Token* stop = previous->getStop();
    antlr4::Token* start = next->getStart();
    if (!IsReal(stop) || !IsReal(start) || stop->getTokenIndex() + 1 != start->getTokenIndex()) return;
    // A syntax error in or between the two was reported already.
    if (errors_.ErrorBetween(previous->getStart()->getTokenIndex(), start->getTokenIndex())) return;
    std::string name = previous->children.empty() ? "field" : previous->children.front()->getText();
    ReportMissingSeparator(diags_, tokens_.Loc(Tok(stop).end), tokens_.Range(Tok(start)), name);
  }

  // field : anyName ASSIGN expr | anyName body ;
  auto BuildField(AvfParser::FieldContext* ctx) -> std::optional<ast::Field> {
    ast::Field field;
    field.range = Range(ctx);
    if (auto* assign = dynamic_cast<AvfParser::AssignFieldContext*>(ctx)) {
      if (!assign->anyName() || !assign->expr()) return std::nullopt;
      field.name = MakeName(assign->anyName());
      field.value = BuildExpr(assign->expr());
    } else if (auto* record = dynamic_cast<AvfParser::RecordFieldContext*>(ctx)) {
      if (!record->anyName() || !record->body()) return std::nullopt;
      field.name = MakeName(record->anyName());
      field.record = std::make_unique<ast::Body>(BuildBody(record->body()));
    } else {
      return std::nullopt;
    }
    return field;
  }

  auto Error(antlr4::ParserRuleContext* ctx) -> ast::ExprPtr { return std::make_unique<ast::ErrorExpr>(Range(ctx)); }

  // expr : term (addOp term)* ;   term : unary (mulOp unary)* ;
  template <typename Ctx, typename OperandCtx, typename OpCtx, typename Build>
  auto BuildChain(Ctx* ctx, std::vector<OperandCtx*> operands, std::vector<OpCtx*> ops, Build build) -> ast::ExprPtr {
    if (operands.empty()) return Error(ctx);
    ast::ExprPtr first = build(operands[0]);
    if (operands.size() == 1 || ops.empty()) return first;
    auto chain = std::make_unique<ast::BinaryExpr>(Range(ctx));
    chain->first = std::move(first);
    for (size_t i = 1; i < operands.size() && i - 1 < ops.size(); ++i) {
      // By token type: the text of an operator may be a look-alike (`–`).
      size_t op = ops[i - 1]->getStart()->getType();
      ast::BinaryOp kind = op == AvfLexer::PLUS    ? ast::BinaryOp::Add
                           : op == AvfLexer::MINUS ? ast::BinaryOp::Subtract
                           : op == AvfLexer::STAR  ? ast::BinaryOp::Multiply
                                                   : ast::BinaryOp::Divide;
      chain->rest.push_back({kind, Range(ops[i - 1]), build(operands[i])});
    }
    return chain;
  }

  auto BuildExpr(AvfParser::ExprContext* ctx) -> ast::ExprPtr {
    if (!ctx) return std::make_unique<ast::ErrorExpr>(llvm::SMRange());
    return BuildChain(ctx, ctx->term(), ctx->addOp(), [this](auto* t) { return BuildTerm(t); });
  }

  auto BuildTerm(AvfParser::TermContext* ctx) -> ast::ExprPtr {
    return BuildChain(ctx, ctx->unary(), ctx->mulOp(), [this](auto* u) { return BuildUnary(u); });
  }

  // unary : (MINUS | PLUS)* postfix ;
  auto BuildUnary(AvfParser::UnaryContext* ctx) -> ast::ExprPtr {
    if (!ctx->postfix()) return Error(ctx);
    ast::ExprPtr operand = BuildPostfix(ctx->postfix());
    if (ctx->MINUS().empty()) return operand;
    auto unary = std::make_unique<ast::UnaryExpr>(Range(ctx));
    for (antlr4::tree::TerminalNode* minus : ctx->MINUS())
      unary->negations.push_back(tokens_.Range(Tok(minus->getSymbol())));
    unary->operand = std::move(operand);
    return unary;
  }

  // postfix : primary (DOT anyName)* ;
  auto BuildPostfix(AvfParser::PostfixContext* ctx) -> ast::ExprPtr {
    if (!ctx->primary()) return Error(ctx);
    ast::ExprPtr base = BuildPrimary(ctx->primary());
    if (ctx->anyName().empty()) return base;
    auto member = std::make_unique<ast::MemberExpr>(Range(ctx));
    member->base = std::move(base);
    for (AvfParser::AnyNameContext* n : ctx->anyName()) member->members.push_back(MakeName(n));
    return member;
  }

  auto BuildPrimary(AvfParser::PrimaryContext* ctx) -> ast::ExprPtr;
  auto BuildNumber(AvfParser::NumberExprContext* ctx) -> ast::ExprPtr;
  auto BuildList(std::vector<AvfParser::ExprContext*> elements, llvm::SMRange range) -> ast::ExprPtr;

  const lex::TokenizedBuffer& tokens_;
  diag::DiagnosticEngine& diags_;
  const SyntaxErrorStrategy& errors_;
  std::forward_list<std::string> saved_text_;
};

// primary : NUMBER | STRING | TRUE | FALSE | AUTO | anyName body
//         | anyName ( args ) | anyName | [ elements ] | ( expr ) ;
auto AstBuilder::BuildPrimary(AvfParser::PrimaryContext* ctx) -> ast::ExprPtr {
  llvm::SMRange range = Range(ctx);
  if (auto* n = dynamic_cast<AvfParser::NumberExprContext*>(ctx)) return BuildNumber(n);
  if (auto* s = dynamic_cast<AvfParser::StringExprContext*>(ctx)) {
    auto e = std::make_unique<ast::StringExpr>(range);
    e->value = StringValue(Tok(s->STRING()->getSymbol()));
    return e;
  }
  if (auto* b = dynamic_cast<AvfParser::BoolExprContext*>(ctx)) {
    auto e = std::make_unique<ast::BoolExpr>(range);
    e->value = b->TRUE() != nullptr;
    return e;
  }
  if (dynamic_cast<AvfParser::AutoExprContext*>(ctx)) return std::make_unique<ast::AutoExpr>(range);
  if (auto* r = dynamic_cast<AvfParser::RecordExprContext*>(ctx)) {
    auto e = std::make_unique<ast::RecordExpr>(range);
    e->type = MakeName(r->anyName());
    e->body = std::make_unique<ast::Body>(BuildBody(r->body()));
    return e;
  }
  if (auto* c = dynamic_cast<AvfParser::CallExprContext*>(ctx)) {
    auto e = std::make_unique<ast::CallExpr>(range);
    e->callee = MakeName(c->anyName());
    for (AvfParser::ExprContext* arg : c->expr()) e->args.push_back(BuildExpr(arg));
    return e;
  }
  if (auto* n = dynamic_cast<AvfParser::NameExprContext*>(ctx)) {
    auto e = std::make_unique<ast::NameExpr>(range);
    e->name = MakeName(n->anyName());
    return e;
  }
  if (auto* l = dynamic_cast<AvfParser::ListExprContext*>(ctx)) return BuildList(l->expr(), range);
  if (auto* p = dynamic_cast<AvfParser::ParenExprContext*>(ctx)) {
    ast::ExprPtr inner = BuildExpr(p->expr());
    inner->set_range(range);
    return inner;
  }
  return Error(ctx);
}

auto AstBuilder::BuildNumber(AvfParser::NumberExprContext* ctx) -> ast::ExprPtr {
  auto e = std::make_unique<ast::NumberExpr>(Range(ctx));
  e->text = tokens_.Text(Tok(ctx->NUMBER()->getSymbol()));
  units::LiteralResult r = units::ParseLiteral(e->text);
  e->value = r.value;
  e->valid = r.error == units::LiteralError::kNone;  // else the lexer reported it
  return e;
}

auto AstBuilder::BuildList(std::vector<AvfParser::ExprContext*> elements, llvm::SMRange range) -> ast::ExprPtr {
  auto e = std::make_unique<ast::ListExpr>(range);
  for (AvfParser::ExprContext* element : elements) e->elements.push_back(BuildExpr(element));
  return e;
}

auto EmptyFile(unsigned buffer_id) -> ast::File {
  ast::File file;
  file.buffer_id = buffer_id;
  return file;
}

}  // namespace

auto ParseByAntlr(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File {
  if (!tokens.parseable()) return EmptyFile(tokens.buffer_id());
  OurTokenSource source(tokens);
  antlr4::CommonTokenStream stream(&source);
  AvfParser parser(&stream);
  parser.removeErrorListeners();
  auto errors = std::make_shared<SyntaxErrorStrategy>(tokens, diags);
  parser.setErrorHandler(errors);
  try {
    AvfParser::FileContext* tree = parser.file();
    return AstBuilder(tokens, diags, *errors).BuildFile(tree);
  } catch (const antlr4::ParseCancellationException&) {
    // Not thrown by SyntaxErrorStrategy (it parses on past the error limit,
    // counting); kept so that a bail-out can never escape the phase.
    return EmptyFile(tokens.buffer_id());
  }
}

auto Parse(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File {
  if (!tokens.parseable()) return EmptyFile(tokens.buffer_id());
  if (std::optional<ast::File> file = ParseByDescent(tokens, diags)) return std::move(*file);
  return ParseByAntlr(tokens, diags);
}

}  // namespace avf::parse
