// The fast path of Parse: a recursive-descent parser of grammar/Avf.g4 that
// builds the AST straight from the lexer's tokens, with no parse tree and no
// token copies. It recovers from nothing: at the first syntax error it gives
// up, reporting nothing, and Parse runs the ANTLR parser, whose recovery and
// messages are the reference. On input without syntax errors both build the
// same AST and report the same diagnostics (test/unit/parse_engines_test.cpp).
#pragma once

#include <optional>

#include "ast/ast.h"
#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"

namespace avf::parse {

auto ParseByDescent(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> std::optional<ast::File>;

}  // namespace avf::parse
