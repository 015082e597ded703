// Phase 2: TokenizedBuffer -> ast::File. ANTLR parses; its contexts are
// converted to the AST here, and syntax errors are reported in the user's
// terms (syntax_errors.cpp). Nothing after this phase sees ANTLR.
#pragma once

#include "ast/ast.h"
#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"

namespace avf::parse {

auto Parse(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> ast::File;

}  // namespace avf::parse
