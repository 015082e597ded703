#include "ast/ast.h"

namespace avf::ast {

namespace {
constexpr std::string_view kKeywords[] = {
#define DECL_KIND(Name, Keyword) Keyword,
#include "ast/decl_kinds.def"
#undef DECL_KIND
};
}  // namespace

auto KeywordOf(DeclKind kind) -> std::string_view { return kKeywords[static_cast<size_t>(kind)]; }

auto DeclKindFromKeyword(std::string_view keyword) -> std::optional<DeclKind> {
  for (size_t i = 0; i < kDeclKindCount; ++i) {
    if (kKeywords[i] == keyword) return static_cast<DeclKind>(i);
  }
  return std::nullopt;
}

NodeArena::~NodeArena() {
  for (Expr* e : to_destroy_) {
    switch (e->kind()) {
      case Expr::Kind::String: static_cast<StringExpr*>(e)->~StringExpr(); break;
      case Expr::Kind::Member: static_cast<MemberExpr*>(e)->~MemberExpr(); break;
      case Expr::Kind::List: static_cast<ListExpr*>(e)->~ListExpr(); break;
      case Expr::Kind::Binary: static_cast<BinaryExpr*>(e)->~BinaryExpr(); break;
      case Expr::Kind::Unary: static_cast<UnaryExpr*>(e)->~UnaryExpr(); break;
      case Expr::Kind::Record: static_cast<RecordExpr*>(e)->~RecordExpr(); break;
      case Expr::Kind::Call: static_cast<CallExpr*>(e)->~CallExpr(); break;
      case Expr::Kind::Number: static_cast<NumberExpr*>(e)->~NumberExpr(); break;
      case Expr::Kind::Bool: static_cast<BoolExpr*>(e)->~BoolExpr(); break;
      case Expr::Kind::Auto: static_cast<AutoExpr*>(e)->~AutoExpr(); break;
      case Expr::Kind::Name: static_cast<NameExpr*>(e)->~NameExpr(); break;
      case Expr::Kind::Error: static_cast<ErrorExpr*>(e)->~ErrorExpr(); break;
    }
  }
}

auto Spelling(BinaryOp op) -> std::string_view {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Subtract: return "-";
    case BinaryOp::Multiply: return "*";
    case BinaryOp::Divide: return "/";
  }
  return "?";
}

}  // namespace avf::ast
