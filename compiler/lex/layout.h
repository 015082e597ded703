// The lexer's second pass (layout.cpp): drops the newlines that cannot end a
// field, balances brackets (reporting E0202/E0209 and inserting empty
// closers) and enforces the nesting limit (E0109).
#pragma once

#include <vector>

#include <llvm/Support/SourceMgr.h>

#include "diag/diagnostic.h"
#include "lex/tokenized_buffer.h"

namespace avf::lex {

// `raw` is every token of the buffer in order, newlines included; `dropped`
// the sorted offsets of malformed characters the scan reported and dropped.
void LayOut(TokenizedBuffer& out, const llvm::SourceMgr& sm, diag::DiagnosticEngine& diags,
            const std::vector<uint32_t>& dropped, const std::vector<Token>& raw);

}  // namespace avf::lex
