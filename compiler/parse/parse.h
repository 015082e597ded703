// Phase 2: TokenizedBuffer -> ast::File. A recursive-descent parser builds
// the AST (descent.h); the top-level items where it meets a syntax error are
// parsed by ANTLR, as far as ANTLR's recovery reaches, its contexts converted
// to the AST here and its errors reported in the user's terms
// (syntax_errors.cpp). The result is that of ANTLR on the whole file. Nothing
// after this phase sees ANTLR.
#pragma once

#include "ast/ast.h"
#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"

namespace avf::parse {

auto Parse(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File;

// The reference parser alone on the whole file, for the tests that hold
// Parse equal to it.
auto ParseByAntlr(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File;

}  // namespace avf::parse
