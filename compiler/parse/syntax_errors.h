// An ANTLR error strategy that reports syntax errors as aviflowc diagnostics
// ("expected a value, found `;`") instead of ANTLR's "mismatched input ...
// expecting {...}". Unclosed brackets never reach the parser: the lexer
// reports them and balances the tokens (lex.h).
//
// Recovery is ANTLR's, with changes for a language of lines: a token that
// cannot start a field or a declaration is reported once and the rest of its
// field (up to a `;`, a newline or the block's `}`) is skipped, as is the rest
// of a value after an error in it; and a newline, `;` or `}` is never deleted
// to make the input fit.
#pragma once

#include "antlr4-runtime.h"

#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"

namespace avf::parse {

class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  // `first`: our index of the first token given to the parser (antlr_tokens.h).
  SyntaxErrorStrategy(const lex::TokenizedBuffer& tokens, size_t first, diag::DiagnosticEngine& diags)
      : tokens_(tokens), first_(first), diags_(diags) {}

  void sync(antlr4::Parser* parser) override;
  void recover(antlr4::Parser* parser, std::exception_ptr e) override;

  // True when a syntax error was reported at a token with ANTLR's index in [first, last].
  auto ErrorBetween(size_t first, size_t last) const -> bool;
  // Our index of an ANTLR token.
  auto Index(antlr4::Token* token) const -> size_t;

 protected:
  auto singleTokenDeletion(antlr4::Parser* parser) -> antlr4::Token* override;
  auto singleTokenInsertion(antlr4::Parser* parser) -> bool override;
  void reportNoViableAlternative(antlr4::Parser* parser, const antlr4::NoViableAltException& e) override;
  void reportInputMismatch(antlr4::Parser* parser, const antlr4::InputMismatchException& e) override;
  void reportFailedPredicate(antlr4::Parser* parser, const antlr4::FailedPredicateException& e) override;
  void reportUnwantedToken(antlr4::Parser* parser) override;
  void reportMissingToken(antlr4::Parser* parser) override;

 private:
  // Reports one syntax error at `offending`, choosing the message from the
  // rule being parsed and the tokens that would have been accepted.
  void Report(antlr4::Parser* parser, antlr4::Token* offending, antlr4::ParserRuleContext* ctx,
              const antlr4::misc::IntervalSet& expected);
  auto DescribeFound(antlr4::Token* token) const -> std::string;
  auto OurToken(antlr4::Token* token) const -> const lex::Token&;
  void ReportDeclHeader(antlr4::ParserRuleContext* decl, const lex::Token& found, const lex::Token* before,
                        const std::string& what);
  void ReportInBlock(antlr4::ParserRuleContext* ctx, llvm::SMRange range, const lex::Token* before,
                     const std::string& what);
  void ReportGeneric(antlr4::Token* offending, antlr4::ParserRuleContext* ctx,
                     const antlr4::misc::IntervalSet& expected);
  // Where panic-mode recovery stops (never consuming that token): at a
  // newline, `;` or the end of the file outside any bracket opened while
  // skipping; kField also at the block's `}`, kValue at any closer.
  enum class SkipTo { kLineEnd, kField, kValue };
  void Skip(antlr4::Parser* parser, SkipTo to);
  auto ValueOnNextLine(antlr4::ParserRuleContext* body) const -> bool;
  auto LastFieldName(antlr4::ParserRuleContext* body) const -> std::string;

  const lex::TokenizedBuffer& tokens_;
  size_t first_;
  diag::DiagnosticEngine& diags_;
  std::vector<size_t> error_tokens_;  // ANTLR's indices of where errors were reported, ascending
};

}  // namespace avf::parse
