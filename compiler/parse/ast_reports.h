// What both parsers (the descent fast path and the ANTLR reference) report
// while building the AST from input without syntax errors, and how they read a
// string token: one definition, so that the two cannot drift apart.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ast/ast.h"
#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"

namespace avf::parse {

// What building the AST reports, kept until the whole file is parsed: the
// ANTLR builder makes these after every syntax error, in the file's order.
using DeferredReports = std::vector<std::function<void(diag::DiagnosticEngine&)>>;

// The value of a string token; an unterminated one (reported by the lexer)
// reads as if it were closed at the end of the line.
auto StringValue(const lex::TokenizedBuffer& tokens, const lex::Token& t) -> std::string;

// `modle m {}`: a declaration keyword that names no kind.
void ReportUnknownDeclKind(diag::DiagnosticEngine& diags, const ast::Name& keyword);

// Two fields with no newline or `;` between them: `a = 1 b = 2`. `end` is
// where the first ends, `next` the first token of the second.
void ReportMissingSeparator(diag::DiagnosticEngine& diags, llvm::SMLoc end, llvm::SMRange next,
                            const std::string& field_name);

}  // namespace avf::parse
