// Phase 2: TokenizedBuffer -> ast::File. A recursive-descent parser builds
// the AST of a file without syntax errors (descent.h); a file with any is
// parsed again by ANTLR, whose contexts are converted to the AST here and
// whose errors are reported in the user's terms (syntax_errors.cpp). Nothing
// after this phase sees ANTLR.
#pragma once

#include "ast/ast.h"
#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"

namespace avf::parse {

auto Parse(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File;

// The reference parser alone, for the test that holds the two equal.
auto ParseByAntlr(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File;

}  // namespace avf::parse
