// Completion: field names of the record around the cursor, values of the
// field being set (enum values, `true`/`false`, declarations of the kind a
// reference expects, `auto`), and declaration keywords between declarations.
#include <set>

#include "lsp/features.h"
#include "lsp/token_context.h"

namespace avf::lsp {

namespace {

auto Keywords() -> std::vector<CompletionItem> {
  std::vector<CompletionItem> out;
  for (std::string_view k : {"import", "gpu", "fabric", "node", "cluster", "storage", "dataset", "model", "job"}) {
    out.push_back({std::string(k), CompletionKind::Keyword, "", "", std::string(k) + " "});
  }
  return out;
}

auto FieldItems(const sema::RecordSchema& record) -> std::vector<CompletionItem> {
  std::vector<CompletionItem> out;
  for (const sema::FieldSchema& f : record.fields) {
    std::string insert = std::string(f.name) + (f.type == sema::FieldType::Record ? " " : " = ");
    out.push_back({std::string(f.name), CompletionKind::Field, sema::DescribeType(f), DescribeField(f), insert});
  }
  return out;
}

auto DeclItems(const Analysis& a, ast::DeclKind kind) -> std::vector<CompletionItem> {
  std::vector<CompletionItem> out;
  std::set<std::string> seen;
  for (const imports::Module& m : a.modules.modules) {
    for (const ast::Decl& d : m.ast.decls) {
      if (d.kind != kind || d.name.text.empty() || !seen.insert(std::string(d.name.text)).second) continue;
      out.push_back({std::string(d.name.text), CompletionKind::Reference,
                     std::string(ast::KeywordOf(kind)) + " in " + m.path, "", std::string(d.name.text)});
    }
  }
  return out;
}

auto ValueItems(const Analysis& a, const sema::FieldSchema& field) -> std::vector<CompletionItem> {
  std::vector<CompletionItem> out;
  const sema::FieldSchema* f = &field;
  if (f->type == sema::FieldType::List && f->element) f = f->element.get();
  if (f->type == sema::FieldType::Enum) {
    for (std::string_view v : f->enum_values) {
      out.push_back({std::string(v), CompletionKind::EnumMember, "a value of `" + std::string(field.name) + "`",
                     std::string(field.doc), std::string(v)});
    }
  }
  if (f->type == sema::FieldType::Bool) {
    for (const char* v : {"true", "false"}) out.push_back({v, CompletionKind::Keyword, "", "", v});
  }
  if (f->type == sema::FieldType::Ref) out = DeclItems(a, f->ref_kind);
  if (field.allow_auto) out.push_back({"auto", CompletionKind::Keyword, "the planner chooses", "", "auto"});
  return out;
}

auto Candidates(const Analysis& a, const lex::TokenizedBuffer& tokens, const TokenContext& c)
    -> std::vector<CompletionItem> {
  const std::vector<lex::Token>& all = tokens.tokens();
  const std::vector<size_t>& s = c.statement;
  if (c.top_level && s.empty()) return Keywords();
  if (c.top_level && s.size() == 3 && all[s[2]].kind == lex::TokenKind::Colon) {
    auto kind = ast::DeclKindFromKeyword(tokens.Text(all[s[0]]).str());
    return kind ? DeclItems(a, *kind) : std::vector<CompletionItem>{};
  }
  if (c.record && s.empty()) return FieldItems(*c.record);
  if (s.size() == 2) {
    if (const sema::FieldSchema* field = StatementField(tokens, c)) return ValueItems(a, *field);
  }
  return {};
}

}  // namespace

auto CompletionsAt(const Analysis& a, size_t offset) -> std::vector<CompletionItem> {
  const imports::Module* main = a.main();
  if (!main || !main->tokens) return {};
  const lex::TokenizedBuffer& tokens = *main->tokens;
  const std::vector<lex::Token>& all = tokens.tokens();
  // A name being typed is the prefix; the context is that before it.
  size_t index = TokenAfter(tokens, offset);
  std::string prefix;
  if (index > 0 && IsName(all[index - 1].kind) && all[index - 1].end >= offset) {
    --index;
    prefix = tokens.source().substr(all[index].begin, offset - all[index].begin).str();
  }
  TokenContext c = ContextAt(tokens, index, a);
  std::vector<CompletionItem> items = Candidates(a, tokens, c);
  std::erase_if(items, [&](const CompletionItem& item) { return item.label.rfind(prefix, 0) != 0; });
  return items;
}

}  // namespace avf::lsp
