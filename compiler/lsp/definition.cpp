// Go to definition: a name to its declaration (in the document, an import or
// the stdlib), `decl.field` to that field in the declaration or its bases,
// and an import's path to the file.
#include <llvm/Support/FileSystem.h>

#include "lex/lex.h"
#include "lsp/features.h"
#include "lsp/token_context.h"

namespace avf::lsp {

namespace {

// Bounds the walk up a chain of bases (a cycle is reported by sema).
constexpr size_t kMaxBaseDepth = 64;

auto Text(const lex::TokenizedBuffer& tokens, size_t i) -> std::string { return tokens.Text(tokens.tokens()[i]).str(); }

// `field` written in `decl` or inherited from one of its bases.
auto FindField(const Analysis& a, const ast::Decl* decl, const std::string& field) -> const ast::Field* {
  for (size_t depth = 0; decl && depth < kMaxBaseDepth; ++depth) {
    for (const ast::Field& f : decl->body.fields) {
      if (f.name.text == field) return &f;
    }
    decl = decl->base ? a.FindDecl(decl->base->text).first : nullptr;
  }
  return nullptr;
}

auto ImportTarget(const Analysis& a, const lex::TokenizedBuffer& tokens, size_t i, const imports::SearchPaths& paths)
    -> std::optional<Target> {
  std::string path = lex::DecodeString(tokens.Text(tokens.tokens()[i]));
  std::vector<std::string> candidates = imports::Candidates(path, a.main()->path, paths);
  for (const std::string& c : candidates) {
    if (llvm::sys::fs::exists(c)) return Target{{}, c};
  }
  return std::nullopt;
}

}  // namespace

auto DefinitionAt(const Analysis& a, size_t offset, const imports::SearchPaths& paths) -> std::optional<Target> {
  const imports::Module* main = a.main();
  if (!main || !main->tokens) return std::nullopt;
  const lex::TokenizedBuffer& tokens = *main->tokens;
  const std::vector<lex::Token>& all = tokens.tokens();
  std::optional<size_t> i = TokenAt(tokens, offset);
  if (!i) return std::nullopt;
  if (all[*i].kind == lex::TokenKind::String && *i > 0 && all[*i - 1].kind == lex::TokenKind::KwImport) {
    return ImportTarget(a, tokens, *i, paths);
  }
  if (!IsName(all[*i].kind)) return std::nullopt;
  std::string word = Text(tokens, *i);
  if (*i >= 2 && all[*i - 1].kind == lex::TokenKind::Dot && IsName(all[*i - 2].kind)) {
    const ast::Field* f = FindField(a, a.FindDecl(Text(tokens, *i - 2)).first, word);
    return f ? std::optional<Target>(Target{f->name.range, ""}) : std::nullopt;
  }
  TokenContext c = ContextAt(tokens, *i, a);
  lex::TokenKind next = *i + 1 < all.size() ? all[*i + 1].kind : lex::TokenKind::EndOfFile;
  bool field_name = !c.top_level && c.statement.empty() && next == lex::TokenKind::Assign;
  if (field_name) return std::nullopt;
  const ast::Decl* decl = a.FindDecl(word).first;
  if (!decl) return std::nullopt;
  return Target{decl->name.range, ""};
}

}  // namespace avf::lsp
