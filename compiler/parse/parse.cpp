// Parses with the descent parser and, from each top-level item where it meets
// a syntax error, runs the ANTLR parser over the lexer's tokens for its
// recovery and messages, converting the parse tree into ast::File right here,
// so later phases never see ANTLR.
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

// Feeds our tokens from index `first` on to the ANTLR parser: start/stop are
// byte offsets and ANTLR's token index i is our index first + i
// (antlr_tokens.h). Tokens name this source so that ANTLR's recovery can
// conjure missing tokens.
class OurTokenSource : public antlr4::TokenSource {
 public:
  OurTokenSource(const lex::TokenizedBuffer& tokens, size_t first) : tokens_(tokens), next_(first) {}

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
  size_t next_;
  antlr4::TokenFactory<antlr4::CommonToken>* factory_ = antlr4::CommonTokenFactory::DEFAULT.get();
};

// Converts parse-tree contexts into AST nodes; what it reports waits in
// `reports` until the whole file is parsed.
class AstBuilder {
 public:
  AstBuilder(const lex::TokenizedBuffer& tokens, size_t first, DeferredReports& reports,
             const SyntaxErrorStrategy& errors, ast::NodeArena& nodes)
      : tokens_(tokens), first_(first), reports_(reports), errors_(errors), nodes_(nodes) {}

  // file : (item | sep)* EOF ;   item : importDecl | decl ;   appended to `file`.
  void BuildItems(AvfParser::FileContext* ctx, ast::File& file) {
    for (AvfParser::ItemContext* item : ctx->item()) {
      if (auto* imp = item->importDecl()) {
        if (!imp->STRING() || !IsReal(imp->STRING()->getSymbol())) continue;
        if (!file.decls.empty()) {
          reports_.push_back(
              [range = Range(imp)](diag::DiagnosticEngine& d) { d.Report(diag::DiagId::ImportNotAtTop, range); });
        }
        const lex::Token& t = Tok(imp->STRING()->getSymbol());
        file.imports.push_back({StringValue(t), tokens_.Range(t), Range(imp)});
      } else if (auto* decl = item->decl()) {
        if (auto d = BuildDecl(decl)) file.decls.push_back(std::move(*d));
      }
    }
    file.saved_text.splice_after(file.saved_text.before_begin(), saved_text_);
  }

 private:
  auto Tok(antlr4::Token* t) const -> const lex::Token& { return OurToken(tokens_, first_, t); }

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
    if (!decl.kind) reports_.push_back([k = decl.keyword](diag::DiagnosticEngine& d) { ReportUnknownDeclKind(d, k); });
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
    llvm::SMLoc end = tokens_.Loc(Tok(stop).end);
    llvm::SMRange second = tokens_.Range(Tok(start));
    reports_.push_back([=](diag::DiagnosticEngine& d) { ReportMissingSeparator(d, end, second, name); });
  }

  // field : anyName ASSIGN expr | anyName body ;
  auto BuildField(AvfParser::FieldContext* ctx) -> std::optional<ast::Field> {
    ast::Field field;
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

  auto Error(antlr4::ParserRuleContext* ctx) -> ast::ExprPtr { return nodes_.Make<ast::ErrorExpr>(Range(ctx)); }

  // expr : term (addOp term)* ;   term : unary (mulOp unary)* ;
  template <typename Ctx, typename OperandCtx, typename OpCtx, typename Build>
  auto BuildChain(Ctx* ctx, std::vector<OperandCtx*> operands, std::vector<OpCtx*> ops, Build build) -> ast::ExprPtr {
    if (operands.empty()) return Error(ctx);
    ast::ExprPtr first = build(operands[0]);
    if (operands.size() == 1 || ops.empty()) return first;
    auto chain = nodes_.Make<ast::BinaryExpr>(Range(ctx));
    chain->first = first;
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
    if (!ctx) return nodes_.Make<ast::ErrorExpr>(llvm::SMRange());
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
    auto unary = nodes_.Make<ast::UnaryExpr>(Range(ctx));
    for (antlr4::tree::TerminalNode* minus : ctx->MINUS())
      unary->negations.push_back(tokens_.Range(Tok(minus->getSymbol())));
    unary->operand = operand;
    return unary;
  }

  // postfix : primary (DOT anyName)* ;
  auto BuildPostfix(AvfParser::PostfixContext* ctx) -> ast::ExprPtr {
    if (!ctx->primary()) return Error(ctx);
    ast::ExprPtr base = BuildPrimary(ctx->primary());
    if (ctx->anyName().empty()) return base;
    auto member = nodes_.Make<ast::MemberExpr>(Range(ctx));
    member->base = base;
    for (AvfParser::AnyNameContext* n : ctx->anyName()) member->members.push_back(MakeName(n));
    return member;
  }

  auto BuildPrimary(AvfParser::PrimaryContext* ctx) -> ast::ExprPtr;
  auto BuildNumber(AvfParser::NumberExprContext* ctx) -> ast::ExprPtr;
  auto BuildList(std::vector<AvfParser::ExprContext*> elements, llvm::SMRange range) -> ast::ExprPtr;

  const lex::TokenizedBuffer& tokens_;
  size_t first_;
  DeferredReports& reports_;
  const SyntaxErrorStrategy& errors_;
  ast::NodeArena& nodes_;
  std::forward_list<std::string> saved_text_;
};

// primary : NUMBER | STRING | TRUE | FALSE | AUTO | anyName body
//         | anyName ( args ) | anyName | [ elements ] | ( expr ) ;
auto AstBuilder::BuildPrimary(AvfParser::PrimaryContext* ctx) -> ast::ExprPtr {
  llvm::SMRange range = Range(ctx);
  if (auto* n = dynamic_cast<AvfParser::NumberExprContext*>(ctx)) return BuildNumber(n);
  if (auto* s = dynamic_cast<AvfParser::StringExprContext*>(ctx)) {
    auto e = nodes_.Make<ast::StringExpr>(range);
    e->value = StringValue(Tok(s->STRING()->getSymbol()));
    return e;
  }
  if (auto* b = dynamic_cast<AvfParser::BoolExprContext*>(ctx)) {
    auto e = nodes_.Make<ast::BoolExpr>(range);
    e->value = b->TRUE() != nullptr;
    return e;
  }
  if (dynamic_cast<AvfParser::AutoExprContext*>(ctx)) return nodes_.Make<ast::AutoExpr>(range);
  if (auto* r = dynamic_cast<AvfParser::RecordExprContext*>(ctx)) {
    auto e = nodes_.Make<ast::RecordExpr>(range);
    e->type = MakeName(r->anyName());
    e->body = std::make_unique<ast::Body>(BuildBody(r->body()));
    return e;
  }
  if (auto* c = dynamic_cast<AvfParser::CallExprContext*>(ctx)) {
    auto e = nodes_.Make<ast::CallExpr>(range);
    e->callee = MakeName(c->anyName());
    for (AvfParser::ExprContext* arg : c->expr()) e->args.push_back(BuildExpr(arg));
    return e;
  }
  if (auto* n = dynamic_cast<AvfParser::NameExprContext*>(ctx)) {
    auto e = nodes_.Make<ast::NameExpr>(range);
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
  auto e = nodes_.Make<ast::NumberExpr>(Range(ctx), tokens_.Text(Tok(ctx->NUMBER()->getSymbol())));
  units::LiteralResult r = units::ParseLiteral(e->text());
  e->value = r.value;
  e->valid = r.error == units::LiteralError::kNone;  // else the lexer reported it
  return e;
}

auto AstBuilder::BuildList(std::vector<AvfParser::ExprContext*> elements, llvm::SMRange range) -> ast::ExprPtr {
  auto e = nodes_.Make<ast::ListExpr>(range);
  for (AvfParser::ExprContext* element : elements) e->elements.push_back(BuildExpr(element));
  return e;
}

auto EmptyFile(unsigned buffer_id) -> ast::File {
  ast::File file;
  file.buffer_id = buffer_id;
  return file;
}

// Thrown where a parse that stops early (AntlrParse::resync) stopped.
struct Resynced {};

// At a turn of the file's loop where no error recovery is pending (the last
// token was matched), ANTLR's state is what it is at the start of a file but
// for DefaultErrorStrategy::lastErrorStates, the parser states of every
// recovery so far (endErrorCondition leaves them): a parse that starts with
// those goes on from there exactly as the parse of the whole file would. So
// a parse with `resync` stops at the first such turn after its first token,
// and the descent parser, which gives the same results as ANTLR wherever it
// accepts an item, takes over.
class ResyncStrategy : public SyntaxErrorStrategy {
 public:
  ResyncStrategy(const lex::TokenizedBuffer& tokens, size_t first, diag::DiagnosticEngine& diags, bool resync,
                 const antlr4::misc::IntervalSet& error_states)
      : SyntaxErrorStrategy(tokens, first, diags), resync_(resync) {
    lastErrorStates = error_states;
  }

  void sync(antlr4::Parser* parser) override {
    if (resync_ && AtResyncPoint(parser)) {
      stopped_in_ = dynamic_cast<AvfParser::FileContext*>(parser->getContext());
      throw Resynced{};
    }
    SyntaxErrorStrategy::sync(parser);
  }

  // The file's context where the parse stopped early.
  auto stopped_in() const -> AvfParser::FileContext* { return stopped_in_; }
  auto error_states() const -> const antlr4::misc::IntervalSet& { return lastErrorStates; }

 private:
  auto AtResyncPoint(antlr4::Parser* parser) -> bool {
    if (!dynamic_cast<AvfParser::FileContext*>(parser->getContext())) return false;
    if (inErrorRecoveryMode(parser) || lastErrorIndex != -1) return false;
    antlr4::Token* next = parser->getCurrentToken();
    size_t type = next->getType();
    bool starts_item_or_sep = type == AvfParser::IMPORT || type == AvfParser::IDENT || type == AvfParser::NL ||
                              type == AvfParser::SEMI || (type >= AvfParser::GPU && type <= AvfParser::JOB);
    return next->getTokenIndex() > 0 && starts_item_or_sep;
  }

  bool resync_;
  AvfParser::FileContext* stopped_in_ = nullptr;
};

// One run of the ANTLR parser from token `first` of a file, adding to `file`.
// Syntax errors are reported as they are found; what the AST builder reports
// is added to `reports`.
struct AntlrParse {
  const lex::TokenizedBuffer& tokens;
  size_t first;
  bool resync;                              // stop at the first resync point (ResyncStrategy)
  antlr4::misc::IntervalSet& error_states;  // the recoveries' states, before and after

  // Our index of the token where the parse stopped, or tokens.size() when it
  // parsed up to the end of the file.
  auto Run(ast::File& file, DeferredReports& reports, diag::DiagnosticEngine& diags) const -> size_t {
    OurTokenSource source(tokens, first);
    antlr4::CommonTokenStream stream(&source);
    AvfParser parser(&stream);
    parser.removeErrorListeners();
    auto errors = std::make_shared<ResyncStrategy>(tokens, first, diags, resync, error_states);
    parser.setErrorHandler(errors);
    try {
      AvfParser::FileContext* tree = parser.file();
      AstBuilder(tokens, first, reports, *errors, *file.nodes).BuildItems(tree, file);
      return tokens.tokens().size();
    } catch (const Resynced&) {
      AstBuilder(tokens, first, reports, *errors, *file.nodes).BuildItems(errors->stopped_in(), file);
      error_states = errors->error_states();
      return errors->Index(parser.getCurrentToken());
    } catch (const antlr4::ParseCancellationException&) {
      // Not thrown by SyntaxErrorStrategy (it parses on past the error limit,
      // counting); kept so that a bail-out can never escape the phase.
      file = EmptyFile(tokens.buffer_id());
      reports.clear();
      return tokens.tokens().size();
    }
  }
};

}  // namespace

auto ParseByAntlr(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File {
  ast::File file = EmptyFile(tokens.buffer_id());
  if (!tokens.parseable()) return file;
  DeferredReports reports;
  antlr4::misc::IntervalSet error_states;
  AntlrParse{tokens, 0, /*resync=*/false, error_states}.Run(file, reports, diags);
  for (const auto& report : reports) report(diags);
  return file;
}

// The descent parser parses the items it can; from the first token of each
// item it cannot, ANTLR parses on until its state no longer depends on what
// came before (ResyncStrategy), and the descent parser takes over again. The
// result is the whole-file ANTLR parse's, for a fraction of the time.
auto Parse(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File {
  ast::File file = EmptyFile(tokens.buffer_id());
  if (!tokens.parseable()) return file;
  DeferredReports reports;
  antlr4::misc::IntervalSet error_states;
  std::optional<size_t> failed = ParseItemsByDescent(tokens, 0, file, reports);
  while (failed) {
    size_t resume = AntlrParse{tokens, *failed, /*resync=*/true, error_states}.Run(file, reports, diags);
    failed = resume < tokens.tokens().size() ? ParseItemsByDescent(tokens, resume, file, reports) : std::nullopt;
  }
  for (const auto& report : reports) report(diags);
  file.decls.shrink_to_fit();  // the AST lives as long as the program: drop the room to grow
  return file;
}

}  // namespace avf::parse
