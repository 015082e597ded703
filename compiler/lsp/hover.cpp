// Hover: a field's meaning and unit from the schema, a reference's
// declaration, and on a job the prediction of its chosen layout (what
// `aviflowc plan` prints for it).
#include <fmt/format.h>
#include <llvm/Support/SourceMgr.h>

#include "check/check.h"
#include "lsp/features.h"
#include "lsp/token_context.h"
#include "plan/planner.h"

namespace avf::lsp {

namespace {

constexpr size_t kShownDeclLines = 12;

auto Text(const lex::TokenizedBuffer& tokens, size_t i) -> std::string { return tokens.Text(tokens.tokens()[i]).str(); }

auto DefaultText(const sema::DefaultValue& d) -> std::string {
  switch (d.kind) {
    case sema::DefaultValue::Kind::Integer: return std::to_string(d.integer);
    case sema::DefaultValue::Kind::Real: return fmt::format("{}", d.real);
    case sema::DefaultValue::Kind::Enum: return std::string(d.text);
    case sema::DefaultValue::Kind::Bool: return d.boolean ? "true" : "false";
    case sema::DefaultValue::Kind::Auto: return "auto";
    case sema::DefaultValue::Kind::SameAs: return fmt::format("the value of `{}`", d.text);
  }
  return "";
}

// The unit suffixes a field of dimension `dim` accepts: "`B`, `KB`, ...".
auto UnitList(units::Dimension dim) -> std::string {
  std::string out;
  for (const units::UnitInfo& u : units::AllUnits()) {
    if (u.dimension == dim) out += (out.empty() ? "`" : ", `") + std::string(u.suffix) + "`";
  }
  return out;
}

// The declaration's first lines as written.
auto DeclSource(const ast::Decl& decl) -> std::string {
  const char* begin = decl.range.Start.getPointer();
  const char* end = decl.range.End.getPointer();
  if (!begin || !end || end < begin) return "";
  llvm::StringRef text(begin, end - begin);
  std::string shown;
  size_t lines = 0;
  while (!text.empty() && lines < kShownDeclLines) {
    auto [line, rest] = text.split('\n');
    shown += line.str() + "\n";
    text = rest;
    ++lines;
  }
  if (!text.empty()) shown += "...\n";
  return shown;
}

auto DeclHover(const Analysis& a, const ast::Decl& decl, const imports::Module& module) -> std::string {
  unsigned line = a.sources->mgr().getLineAndColumn(decl.name.range.Start, module.buffer_id).first;
  return fmt::format("```avf\n{}```\n{} `{}`, declared in `{}` line {}", DeclSource(decl), decl.keyword.text,
                     decl.name.text, module.path, line);
}

auto JobHover(const Analysis& a, const std::string& name) -> std::string {
  for (const plan::Plan& p : a.plans) {
    if (p.job.name != name) continue;
    const cost::Prediction& q = p.chosen.prediction;
    return fmt::format(
        "**job `{}`**: {}\n\n- memory per GPU: {} of {}\n- step time: {:.4g} s\n- MFU: {:.1f}%\n- binding: {}", name,
        plan::LayoutSummary(p.chosen.layout), check::BytesText(q.memory_per_gpu),
        check::BytesText(p.job.hardware.gpu_memory), q.step_time, 100 * q.mfu, p.chosen.binding);
  }
  return a.diags.has_errors() ? fmt::format("job `{}`: no plan while the document has errors", name)
                              : fmt::format("job `{}`: no layout could be planned", name);
}

// A declaration's keyword or name: the declaration, and a job's plan.
auto DeclarationHover(const Analysis& a, const ast::Decl& decl, const imports::Module& module) -> std::string {
  std::string out = DeclHover(a, decl, module);
  if (decl.kind == ast::DeclKind::Job && module.is_main) out = JobHover(a, std::string(decl.name.text)) + "\n\n" + out;
  return out;
}

auto EnumHover(const sema::FieldSchema& field, const std::string& value) -> std::string {
  std::string out = fmt::format("`{}`: a value of `{}`, {}", value, field.name, sema::DescribeType(field));
  if (!field.doc.empty()) out += fmt::format("\n\n`{}`: {}", field.name, field.doc);
  return out;
}

// The hover of name token `i`, from where it stands.
auto NameHover(const Analysis& a, const lex::TokenizedBuffer& tokens, size_t i) -> std::optional<std::string> {
  TokenContext c = ContextAt(tokens, i, a);
  std::string word = Text(tokens, i);
  const std::vector<lex::Token>& all = tokens.tokens();
  lex::TokenKind next = i + 1 < all.size() ? all[i + 1].kind : lex::TokenKind::EndOfFile;
  if (c.top_level && c.statement.size() <= 1) {
    for (const ast::Decl& d : a.main()->ast.decls) {
      const char* p = tokens.source().data() + all[i].begin;
      if (d.range.Start.getPointer() <= p && p < d.range.End.getPointer()) return DeclarationHover(a, d, *a.main());
    }
  }
  if (!c.top_level && c.statement.empty() && (next == lex::TokenKind::Assign || next == lex::TokenKind::LBrace)) {
    const sema::FieldSchema* field = c.record ? c.record->Find(word) : nullptr;
    if (!field) return std::nullopt;
    return DescribeField(*field);
  }
  if (const sema::FieldSchema* field = StatementField(tokens, c); field && field->type == sema::FieldType::Enum) {
    if (std::find(field->enum_values.begin(), field->enum_values.end(), word) != field->enum_values.end()) {
      return EnumHover(*field, word);
    }
  }
  if (auto [decl, module] = a.FindDecl(word); decl) return DeclarationHover(a, *decl, *module);
  return std::nullopt;
}

}  // namespace

auto DescribeField(const sema::FieldSchema& field) -> std::string {
  std::string out = fmt::format("**{}**: {}", field.name, sema::DescribeType(field));
  if (!field.doc.empty()) out += fmt::format(" — {}", field.doc);
  std::vector<std::string> facts;
  if (field.type == sema::FieldType::Quantity && !field.dim.IsCount()) facts.push_back("units: " + UnitList(field.dim));
  if (field.type == sema::FieldType::Quantity && (field.min || field.max)) facts.push_back(sema::DescribeRange(field));
  if (field.required) facts.push_back("required");
  if (field.default_value) facts.push_back("default: " + DefaultText(*field.default_value));
  if (field.allow_auto) facts.push_back("`auto` lets the planner choose");
  for (const std::string& f : facts) out += "\n- " + f;
  return out;
}

auto HoverAt(const Analysis& a, size_t offset) -> std::optional<HoverResult> {
  const imports::Module* main = a.main();
  if (!main || !main->tokens) return std::nullopt;
  const lex::TokenizedBuffer& tokens = *main->tokens;
  std::optional<size_t> i = TokenAt(tokens, offset);
  if (!i || !IsName(tokens.tokens()[*i].kind)) return std::nullopt;
  std::optional<std::string> text = NameHover(a, tokens, *i);
  if (!text) return std::nullopt;
  return HoverResult{*text, tokens.Range(tokens.tokens()[*i])};
}

}  // namespace avf::lsp
