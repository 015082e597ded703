// The fast path of Parse: a recursive-descent parser of grammar/Avf.g4 that
// builds the AST straight from the lexer's tokens, with no parse tree and no
// token copies. It recovers from nothing: at the first syntax error in a
// top-level item it gives up on that item, reporting nothing, and Parse runs
// the ANTLR parser from there, whose recovery and messages are the reference.
// On input without syntax errors both build the same AST and report the same
// diagnostics (test/unit/parse_engines_test.cpp).
#pragma once

#include <optional>

#include "ast/ast.h"
#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"
#include "parse/ast_reports.h"

namespace avf::parse {

// Parses the file's items from token `first` (at the start of an item or of
// a separator) into `file`, adding what they report to `reports`. Returns
// std::nullopt at the end of the file, or the index of the first token of an
// item with a syntax error, of which nothing is kept.
auto ParseItemsByDescent(const lex::TokenizedBuffer& tokens, size_t first, ast::File& file, DeferredReports& reports)
    -> std::optional<size_t>;

// The whole file, or std::nullopt (reporting nothing) at a syntax error.
auto ParseByDescent(const lex::TokenizedBuffer& tokens, diag::DiagnosticEngine& diags) -> std::optional<ast::File>;

}  // namespace avf::parse
