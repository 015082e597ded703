// Phase 1: source text -> TokenizedBuffer, reporting lexical errors.
#pragma once

#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"
#include "source/source_set.h"

namespace avf::lex {

// Deeper bracket nesting is rejected before parsing; the parser and every
// later phase recurse on nesting, so this bound keeps their stacks small.
inline constexpr size_t kMaxNesting = 256;

auto Lex(const source::SourceSet& sources, unsigned buffer_id, diag::DiagnosticEngine& diags)
    -> TokenizedBuffer;

// Decodes the escapes of a STRING token's text (quotes included). Invalid
// escapes are reported (once, by the lexer); here they are dropped.
auto DecodeString(llvm::StringRef token_text) -> std::string;

// --dump=tokens: one token per line, `line:col kind 'text'`.
void DumpTokens(const source::SourceSet& sources, const TokenizedBuffer& tokens,
                llvm::raw_ostream& os);

}  // namespace avf::lex
