// Where a token of the document sits, read from the tokens alone so that it
// works on a document that does not parse: the record whose body holds it
// (its schema), and the tokens of its statement before it (since the last
// `{`, `;` or newline of that body). Hover and completion use it.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "lex/tokenized_buffer.h"
#include "lsp/analysis.h"
#include "sema/schema.h"

namespace avf::lsp {

struct TokenContext {
  bool top_level = true;                       // between declarations
  const sema::RecordSchema* record = nullptr;  // the body around it, when known
  std::vector<size_t> statement;               // token indices
};

// The context of a token that would stand at index `index` of `tokens`.
auto ContextAt(const lex::TokenizedBuffer& tokens, size_t index, const Analysis& analysis) -> TokenContext;

// The token whose text holds `offset` or ends there (an identifier being
// typed), preferring a name; nullopt between tokens.
auto TokenAt(const lex::TokenizedBuffer& tokens, size_t offset) -> std::optional<size_t>;

// The first token that starts at or after `offset`.
auto TokenAfter(const lex::TokenizedBuffer& tokens, size_t offset) -> size_t;

auto IsName(lex::TokenKind kind) -> bool;

// The field a statement `NAME = ...` sets, when its body's schema has it.
auto StatementField(const lex::TokenizedBuffer& tokens, const TokenContext& context) -> const sema::FieldSchema*;

}  // namespace avf::lsp
