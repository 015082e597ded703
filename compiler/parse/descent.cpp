// One function per rule of grammar/Avf.g4, each building its AST node; a
// rule's source range runs from its first token to the last one it took, as
// the ANTLR builder's Range(ctx) does.
#include "parse/descent.h"

#include <vector>

#include "parse/ast_reports.h"

namespace avf::parse {

namespace {

using lex::Token;
using lex::TokenKind;

// Thrown at the first token the grammar does not allow; ParseItems drops
// the item and hands it to the ANTLR parser.
struct SyntaxError {};

class DescentParser {
 public:
  DescentParser(const lex::TokenizedBuffer& tokens, size_t first, DeferredReports& reports, ast::NodeArena& nodes)
      : tokens_(tokens), all_(tokens.tokens()), next_(first), reports_(reports), nodes_(nodes) {}

  // file : (item | sep)* EOF ;   item : importDecl | decl ;
  auto ParseItems(ast::File& file) -> std::optional<size_t> {
    for (TokenKind k = Peek(); k != TokenKind::EndOfFile; k = Peek()) {
      if (IsSeparator(k)) {
        ++next_;
        continue;
      }
      size_t item = next_;
      size_t reported = reports_.size();
      try {
        if (k == TokenKind::KwImport) file.imports.push_back(ParseImport(!file.decls.empty()));
        else file.decls.push_back(ParseDecl());
      } catch (const SyntaxError&) {
        reports_.resize(reported);
        return item;
      }
    }
    return std::nullopt;
  }

 private:
  auto Peek(size_t ahead = 0) const -> TokenKind {
    size_t i = next_ + ahead;
    return i < all_.size() ? all_[i].kind : TokenKind::EndOfFile;
  }
  static auto IsSeparator(TokenKind k) -> bool { return k == TokenKind::Newline || k == TokenKind::Semi; }
  static auto IsString(TokenKind k) -> bool { return k == TokenKind::String || k == TokenKind::UnterminatedString; }
  // anyName : IDENT | GPU | FABRIC | NODE | CLUSTER | STORAGE | DATASET | MODEL | JOB ;
  static auto IsName(TokenKind k) -> bool {
    return k == TokenKind::Identifier || (k >= TokenKind::KwGpu && k <= TokenKind::KwJob);
  }

  auto Take(bool allowed) -> const Token& {
    if (!allowed) throw SyntaxError{};
    return all_[next_++];
  }
  auto TakeName() -> ast::Name {
    const Token& t = Take(IsName(Peek()));
    return {tokens_.Text(t), tokens_.Range(t)};
  }
  // From token `first` to the last one taken.
  auto SpanFrom(size_t first) const -> llvm::SMRange {
    return {tokens_.Loc(all_[first].begin), tokens_.Loc(all_[next_ - 1].end)};
  }

  // importDecl : IMPORT STRING ;
  auto ParseImport(bool after_decls) -> ast::Import {
    size_t first = next_++;
    const Token& path = Take(IsString(Peek()));
    ast::Import import{StringValue(tokens_, path), tokens_.Range(path), SpanFrom(first)};
    if (after_decls) {
      reports_.push_back(
          [range = import.statement](diag::DiagnosticEngine& d) { d.Report(diag::DiagId::ImportNotAtTop, range); });
    }
    return import;
  }

  // decl : kind=anyName name=IDENT (COLON base=IDENT)? body ;
  auto ParseDecl() -> ast::Decl {
    size_t first = next_;
    ast::Decl decl;
    decl.keyword = TakeName();
    decl.kind = ast::DeclKindFromKeyword(decl.keyword.text);
    if (!decl.kind) reports_.push_back([k = decl.keyword](diag::DiagnosticEngine& d) { ReportUnknownDeclKind(d, k); });
    if (Peek() != TokenKind::Identifier) throw SyntaxError{};
    decl.name = TakeName();
    if (Peek() == TokenKind::Colon) {
      ++next_;
      if (Peek() != TokenKind::Identifier) throw SyntaxError{};
      decl.base = TakeName();
    }
    decl.body = ParseBody();
    decl.range = SpanFrom(first);
    return decl;
  }

  // body : LBRACE (field | sep)* RBRACE ;
  auto ParseBody() -> ast::Body {
    size_t first = next_;
    Take(Peek() == TokenKind::LBrace);
    ast::Body body;
    size_t previous_end = 0;  // one past the previous field's last token; 0: none yet
    for (TokenKind k = Peek(); k != TokenKind::RBrace; k = Peek()) {
      if (IsSeparator(k)) {
        ++next_;
        continue;
      }
      if (previous_end == next_) ReportSeparatorMissing(body.fields.back().name.text);
      body.fields.push_back(ParseField());
      previous_end = next_;
    }
    ++next_;
    body.range = SpanFrom(first);
    // A file is mostly fields: the spare capacity of growth is dropped.
    body.fields.shrink_to_fit();
    return body;
  }

  void ReportSeparatorMissing(std::string_view previous_name) {
    llvm::SMLoc end = tokens_.Loc(all_[next_ - 1].end);
    llvm::SMRange next = tokens_.Range(all_[next_]);
    reports_.push_back([=, name = std::string(previous_name)](diag::DiagnosticEngine& d) {
      ReportMissingSeparator(d, end, next, name);
    });
  }

  // field : anyName ASSIGN expr | anyName body ;
  auto ParseField() -> ast::Field {
    ast::Field field;
    field.name = TakeName();
    if (Peek() == TokenKind::Assign) {
      ++next_;
      field.value = ParseExpr();
    } else {
      field.record = std::make_unique<ast::Body>(ParseBody());
    }
    return field;
  }

  // expr : term (addOp term)* ;   term : unary (mulOp unary)* ;
  auto ParseExpr() -> ast::ExprPtr { return ParseChain(/*additive=*/true); }

  static auto OperatorOf(TokenKind k, bool additive) -> std::optional<ast::BinaryOp> {
    if (additive && k == TokenKind::Plus) return ast::BinaryOp::Add;
    if (additive && k == TokenKind::Minus) return ast::BinaryOp::Subtract;
    if (!additive && k == TokenKind::Star) return ast::BinaryOp::Multiply;
    if (!additive && k == TokenKind::Slash) return ast::BinaryOp::Divide;
    return std::nullopt;
  }

  auto ParseChain(bool additive) -> ast::ExprPtr {
    size_t first = next_;
    auto operand = [&] { return additive ? ParseChain(false) : ParseUnary(); };
    ast::ExprPtr head = operand();
    std::optional<ast::BinaryOp> op = OperatorOf(Peek(), additive);
    if (!op) return head;
    auto chain = nodes_.Make<ast::BinaryExpr>(llvm::SMRange());
    chain->first = head;
    for (; op; op = OperatorOf(Peek(), additive)) {
      llvm::SMRange op_range = tokens_.Range(all_[next_++]);
      chain->rest.push_back({*op, op_range, operand()});
    }
    chain->set_range(SpanFrom(first));
    return chain;
  }

  // unary : (MINUS | PLUS)* postfix ;   `+` signs are dropped.
  auto ParseUnary() -> ast::ExprPtr {
    size_t first = next_;
    std::vector<llvm::SMRange> negations;
    for (; Peek() == TokenKind::Minus || Peek() == TokenKind::Plus; ++next_)
      if (Peek() == TokenKind::Minus) negations.push_back(tokens_.Range(all_[next_]));
    ast::ExprPtr operand = ParsePostfix();
    if (negations.empty()) return operand;
    auto unary = nodes_.Make<ast::UnaryExpr>(SpanFrom(first));
    unary->negations = std::move(negations);
    unary->operand = operand;
    return unary;
  }

  // postfix : primary (DOT anyName)* ;
  auto ParsePostfix() -> ast::ExprPtr {
    size_t first = next_;
    ast::ExprPtr base = ParsePrimary();
    if (Peek() != TokenKind::Dot) return base;
    auto member = nodes_.Make<ast::MemberExpr>(llvm::SMRange());
    member->base = base;
    while (Peek() == TokenKind::Dot) {
      ++next_;
      member->members.push_back(TakeName());
    }
    member->set_range(SpanFrom(first));
    return member;
  }

  auto ParsePrimary() -> ast::ExprPtr;
  auto ParseNamed() -> ast::ExprPtr;
  auto ParseList() -> ast::ExprPtr;
  auto ParseElements(TokenKind closer) -> std::vector<ast::ExprPtr>;

  const lex::TokenizedBuffer& tokens_;
  const std::vector<Token>& all_;
  size_t next_;
  DeferredReports& reports_;
  ast::NodeArena& nodes_;
};

// primary : NUMBER | STRING | TRUE | FALSE | AUTO | anyName body
//         | anyName ( args ) | anyName | [ elements ] | ( expr ) ;
auto DescentParser::ParsePrimary() -> ast::ExprPtr {
  size_t first = next_;
  TokenKind k = Peek();
  if (IsName(k)) return ParseNamed();
  if (k == TokenKind::LBracket) return ParseList();
  if (k == TokenKind::LParen) {
    ++next_;
    ast::ExprPtr inner = ParseExpr();
    Take(Peek() == TokenKind::RParen);
    inner->set_range(SpanFrom(first));
    return inner;
  }
  const Token& t = all_[next_++];
  llvm::SMRange range = tokens_.Range(t);
  if (k == TokenKind::Number) {
    auto e = nodes_.Make<ast::NumberExpr>(range, tokens_.Text(t));
    units::LiteralResult r = units::ParseLiteral(e->text());
    e->value = r.value;
    e->valid = r.error == units::LiteralError::kNone;  // else the lexer reported it
    return e;
  }
  if (IsString(k)) {
    auto e = nodes_.Make<ast::StringExpr>(range);
    e->value = StringValue(tokens_, t);
    return e;
  }
  if (k == TokenKind::KwTrue || k == TokenKind::KwFalse) {
    auto e = nodes_.Make<ast::BoolExpr>(range);
    e->value = k == TokenKind::KwTrue;
    return e;
  }
  if (k == TokenKind::KwAuto) return nodes_.Make<ast::AutoExpr>(range);
  throw SyntaxError{};
}

// anyName body | anyName LPAREN (expr (COMMA expr)* COMMA?)? RPAREN | anyName
auto DescentParser::ParseNamed() -> ast::ExprPtr {
  size_t first = next_;
  ast::Name name = TakeName();
  if (Peek() == TokenKind::LBrace) {
    auto e = nodes_.Make<ast::RecordExpr>(llvm::SMRange());
    e->type = std::move(name);
    e->body = std::make_unique<ast::Body>(ParseBody());
    e->set_range(SpanFrom(first));
    return e;
  }
  if (Peek() != TokenKind::LParen) {
    auto e = nodes_.Make<ast::NameExpr>(name.range);
    e->name = std::move(name);
    return e;
  }
  auto e = nodes_.Make<ast::CallExpr>(llvm::SMRange());
  e->callee = std::move(name);
  e->args = ParseElements(TokenKind::RParen);
  e->set_range(SpanFrom(first));
  return e;
}

// LBRACKET (expr (COMMA expr)* COMMA?)? RBRACKET
auto DescentParser::ParseList() -> ast::ExprPtr {
  size_t first = next_;
  auto e = nodes_.Make<ast::ListExpr>(llvm::SMRange());
  e->elements = ParseElements(TokenKind::RBracket);
  e->set_range(SpanFrom(first));
  return e;
}

// The opener, then (expr (COMMA expr)* COMMA?)? up to and with `closer`.
auto DescentParser::ParseElements(TokenKind closer) -> std::vector<ast::ExprPtr> {
  ++next_;
  std::vector<ast::ExprPtr> elements;
  while (Peek() != closer) {
    elements.push_back(ParseExpr());
    if (Peek() != TokenKind::Comma) break;
    ++next_;
  }
  Take(Peek() == closer);
  return elements;
}

}  // namespace

auto ParseItemsByDescent(const lex::TokenizedBuffer& tokens, size_t first, ast::File& file, DeferredReports& reports)
    -> std::optional<size_t> {
  return DescentParser(tokens, first, reports, *file.nodes).ParseItems(file);
}

auto ParseByDescent(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> std::optional<ast::File> {
  ast::File file;
  file.buffer_id = tokens.buffer_id();
  DeferredReports reports;
  if (ParseItemsByDescent(tokens, 0, file, reports)) return std::nullopt;
  for (const auto& report : reports) report(diags);
  return file;
}

}  // namespace avf::parse
