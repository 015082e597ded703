// An ANTLR error strategy that reports syntax errors as aviflowc diagnostics
// ("expected `}` to close `job pretrain` opened at 12:1") instead of ANTLR's
// "mismatched input ... expecting {...}". Recovery is ANTLR's own.
#pragma once

#include "antlr4-runtime.h"

#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"

namespace avf::parse {

class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  SyntaxErrorStrategy(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags)
      : tokens_(tokens), diags_(diags) {}

 protected:
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
  auto PreviousEnd(antlr4::Parser* parser) const -> llvm::SMLoc;
  auto TryUnclosed(antlr4::Parser* parser, antlr4::Token* offending, antlr4::ParserRuleContext* ctx,
                   const antlr4::misc::IntervalSet& expected) -> bool;
  void ReportGeneric(antlr4::Token* offending, antlr4::ParserRuleContext* ctx,
                     const antlr4::misc::IntervalSet& expected);
  void StopIfTooMany();
  auto LineColumn(uint32_t offset) const -> std::string;

  const lex::TokenizedBuffer& tokens_;
  diag::DiagnosticEngine& diags_;
};

}  // namespace avf::parse
