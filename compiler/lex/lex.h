// Phase 1: source text -> TokenizedBuffer, reporting lexical errors.
#pragma once

#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"
#include "source/source_set.h"

namespace avf::lex {

// Deeper bracket nesting is rejected before parsing; the parser and every
// later phase recurse on nesting, so this bound keeps their stacks small.
inline constexpr size_t kMaxNesting = 256;

// Lexes one buffer, reporting malformed tokens (E01xx). Some slips are read
// as what was meant, so that they cause no follow-on errors: `#` starts a
// comment, `'x'` and `“x”` are strings, `–` and `×` are `-` and `*`, an
// unterminated string ends with its line, and a name with non-ASCII letters
// is one name. Brackets are balanced for the parser: where some are left open
// (before a closer of another kind, a line that starts a field inside `[` or
// `(`, a line that starts a declaration inside a block, or the end of the
// file) the innermost is reported (E0202, E0209) and empty closers are
// inserted. Closers without an opener are left for the parser. Past the
// error limit lexing goes on, counting errors, but the buffer is marked not
// parseable.
auto Lex(const source::SourceSet& sources, unsigned buffer_id, diag::DiagnosticEngine& diags) -> TokenizedBuffer;

// Decodes the escapes of a STRING token's text (quotes included). Invalid
// escapes are reported (once, by the lexer); here they are dropped.
auto DecodeString(llvm::StringRef token_text) -> std::string;

// --dump=tokens: one token per line, `line:col kind 'text'`; inserted closers
// show as `line:col RBrace (inserted)`.
void DumpTokens(const source::SourceSet& sources, const TokenizedBuffer& tokens, llvm::raw_ostream& os);

}  // namespace avf::lex
