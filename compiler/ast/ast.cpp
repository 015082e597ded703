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
  for (auto [node, destroy] : to_destroy_) destroy(node);
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
