// Phase 1: source text -> TokenizedBuffer, reporting lexical errors.
#pragma once

#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"
#include "source/source_set.h"

namespace avf::lex {

// Deeper bracket nesting is rejected before parsing; the parser and every
// later phase recurse on nesting, so this bound keeps their stacks small.
inline constexpr size_t kMaxNesting = 256;

// Lexes one buffer, reporting malformed tokens (E01xx), and balances its
// brackets for the parser: a `{`, `[` or `(` left open is reported once (E0202,
// E0209) where it should have been closed (before a closer of another kind, a
// line that starts a field inside `[`/`(`, a line that starts a declaration
// inside a block, or the end of the file) and an empty closer token is
// inserted there. Closers without an opener are left for the parser.
auto Lex(const source::SourceSet& sources, unsigned buffer_id, diag::DiagnosticEngine& diags)
    -> TokenizedBuffer;

// Source text for a message: at most 40 bytes, longer text is cut short with
// `...` (so that a 1 MB name does not make a 1 MB message).
auto ShortText(llvm::StringRef text) -> std::string;

// Decodes the escapes of a STRING token's text (quotes included). Invalid
// escapes are reported (once, by the lexer); here they are dropped.
auto DecodeString(llvm::StringRef token_text) -> std::string;

// --dump=tokens: one token per line, `line:col kind 'text'`; inserted closers
// show as `line:col RBrace (inserted)`.
void DumpTokens(const source::SourceSet& sources, const TokenizedBuffer& tokens,
                llvm::raw_ostream& os);

}  // namespace avf::lex
