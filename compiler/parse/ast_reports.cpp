#include "parse/ast_reports.h"

#include <vector>

#include "lex/lex.h"

namespace avf::parse {

auto StringValue(const lex::TokenizedBuffer& tokens, const lex::Token& t) -> std::string {
  std::string text = tokens.Text(t).str();
  if (t.kind == lex::TokenKind::UnterminatedString) text += '"';
  return lex::DecodeString(text);
}

void ReportUnknownDeclKind(diag::DiagnosticEngine& diags, const ast::Name& keyword) {
  auto b = diags.Report(diag::DiagId::UnknownDeclKind, keyword.range, keyword.text);
  std::vector<std::string> kinds;
  for (size_t i = 0; i < ast::kDeclKindCount; ++i) kinds.emplace_back(ast::KeywordOf(static_cast<ast::DeclKind>(i)));
  std::string best = diag::ClosestMatch(keyword.text, kinds);
  if (!best.empty()) b.Suggest(keyword.range, best);
  else b.Help("the kinds are gpu, fabric, node, cluster, storage, dataset, model and job");
}

void ReportMissingSeparator(diag::DiagnosticEngine& diags, llvm::SMLoc end, llvm::SMRange next,
                            const std::string& field_name) {
  diags.Report(diag::DiagId::ExpectedFieldSeparator, llvm::SMRange(end, end), field_name)
      .Range(next)
      .Fix(llvm::SMRange(end, end), ";");
}

}  // namespace avf::parse
