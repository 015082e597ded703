#include "lsp/token_context.h"

#include <algorithm>

namespace avf::lsp {

namespace {

using lex::TokenKind;

struct Frame {
  TokenKind opener = TokenKind::LBrace;
  const sema::RecordSchema* record = nullptr;
  const sema::FieldSchema* field = nullptr;  // `[` or `(`: the field whose value it is
  std::vector<size_t> statement;
};

auto Text(const lex::TokenizedBuffer& tokens, size_t i) -> std::string_view {
  llvm::StringRef t = tokens.Text(tokens.tokens()[i]);
  return {t.data(), t.size()};
}

auto SchemaOfDecl(const Analysis& analysis, std::string_view name) -> const sema::RecordSchema* {
  const ast::Decl* decl = analysis.FindDecl(name).first;
  return decl && decl->kind ? &sema::SchemaOf(*decl->kind) : nullptr;
}

// The schema of the body a `{` opens, from the statement before it:
// `KIND NAME : BASE {`, `FIELD {` or `... TYPE {`.
auto OpenedRecord(const lex::TokenizedBuffer& tokens, const std::vector<Frame>& stack, const Analysis& analysis)
    -> const sema::RecordSchema* {
  const Frame& outer = stack.back();
  const std::vector<size_t>& s = outer.statement;
  if (s.empty()) return nullptr;
  if (stack.size() == 1) {
    auto kind = ast::DeclKindFromKeyword(Text(tokens, s.front()));
    return kind ? &sema::SchemaOf(*kind) : nullptr;
  }
  std::string_view last = Text(tokens, s.back());
  const sema::FieldSchema* field = outer.field;
  if (outer.record && IsName(tokens.tokens()[s.front()].kind)) {
    field = outer.record->Find(Text(tokens, s.front()));
  }
  if (s.size() > 1) {
    if (const sema::RecordSchema* builtin = sema::BuiltinRecord(last)) return builtin;
    if (const sema::RecordSchema* decl = SchemaOfDecl(analysis, last)) return decl;
  }
  if (!field) return nullptr;
  if (field->type == sema::FieldType::List && field->element) field = field->element.get();
  if (field->type == sema::FieldType::Record) return field->record;
  if (field->type == sema::FieldType::Ref) return &sema::SchemaOf(field->ref_kind);
  return nullptr;
}

void Open(const lex::TokenizedBuffer& tokens, TokenKind kind, std::vector<Frame>& stack, const Analysis& analysis) {
  Frame frame;
  frame.opener = kind;
  if (kind == TokenKind::LBrace) {
    frame.record = OpenedRecord(tokens, stack, analysis);
  } else {
    const Frame& outer = stack.back();
    frame.field = outer.field;
    if (outer.record && !outer.statement.empty()) {
      frame.field = outer.record->Find(Text(tokens, outer.statement.front()));
    }
  }
  stack.push_back(std::move(frame));
}

}  // namespace

auto IsName(TokenKind kind) -> bool {
  switch (kind) {
    case TokenKind::Identifier:
    case TokenKind::KwGpu:
    case TokenKind::KwFabric:
    case TokenKind::KwNode:
    case TokenKind::KwCluster:
    case TokenKind::KwStorage:
    case TokenKind::KwDataset:
    case TokenKind::KwModel:
    case TokenKind::KwJob: return true;
    default: return false;
  }
}

auto ContextAt(const lex::TokenizedBuffer& tokens, size_t index, const Analysis& analysis) -> TokenContext {
  std::vector<Frame> stack(1);  // the top level
  const std::vector<lex::Token>& all = tokens.tokens();
  index = std::min(index, all.size());
  for (size_t i = 0; i < index; ++i) {
    TokenKind kind = all[i].kind;
    if (kind == TokenKind::LBrace || kind == TokenKind::LBracket || kind == TokenKind::LParen) {
      Open(tokens, kind, stack, analysis);
    } else if (kind == TokenKind::RBrace || kind == TokenKind::RBracket || kind == TokenKind::RParen) {
      if (stack.size() > 1) stack.pop_back();
      // A declaration ends with its body, even without a newline after it.
      if (stack.size() == 1 && kind == TokenKind::RBrace) stack.back().statement.clear();
      else stack.back().statement.push_back(i);
    } else if (kind == TokenKind::Newline || kind == TokenKind::Semi) {
      stack.back().statement.clear();
    } else {
      stack.back().statement.push_back(i);
    }
  }
  TokenContext context;
  context.top_level = stack.size() == 1;
  context.record = stack.back().record;
  context.statement = std::move(stack.back().statement);
  return context;
}

auto TokenAt(const lex::TokenizedBuffer& tokens, size_t offset) -> std::optional<size_t> {
  const std::vector<lex::Token>& all = tokens.tokens();
  size_t i = TokenAfter(tokens, offset);
  if (i < all.size() && all[i].begin == offset && IsName(all[i].kind)) return i;
  if (i > 0 && all[i - 1].begin <= offset && offset <= all[i - 1].end && all[i - 1].kind != TokenKind::Newline) {
    return i - 1;
  }
  if (i < all.size() && all[i].begin == offset && all[i].kind != TokenKind::EndOfFile) return i;
  return std::nullopt;
}

auto TokenAfter(const lex::TokenizedBuffer& tokens, size_t offset) -> size_t {
  const std::vector<lex::Token>& all = tokens.tokens();
  return std::lower_bound(all.begin(), all.end(), offset, [](const lex::Token& t, size_t o) { return t.begin < o; }) -
         all.begin();
}

auto StatementField(const lex::TokenizedBuffer& tokens, const TokenContext& context) -> const sema::FieldSchema* {
  const std::vector<size_t>& s = context.statement;
  if (!context.record || s.size() < 2 || tokens.tokens()[s[1]].kind != TokenKind::Assign) return nullptr;
  return context.record->Find(Text(tokens, s.front()));
}

}  // namespace avf::lsp
