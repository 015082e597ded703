// The language features on one analysed document, in the compiler's terms:
// byte offsets into the document and source ranges. workspace.cpp turns
// them into protocol positions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <llvm/Support/SMLoc.h>

#include "imports/imports.h"
#include "lsp/analysis.h"
#include "lsp/protocol.h"

namespace avf::lsp {

struct HoverResult {
  std::string markdown;
  llvm::SMRange range;  // the word hovered
};

auto HoverAt(const Analysis& analysis, size_t offset) -> std::optional<HoverResult>;

// Where a name is declared: a range in a loaded buffer, or the start of a
// file (an import's path).
struct Target {
  llvm::SMRange range;
  std::string path;  // when `range` is not valid
};

auto DefinitionAt(const Analysis& analysis, size_t offset, const imports::SearchPaths& paths) -> std::optional<Target>;

auto CompletionsAt(const Analysis& analysis, size_t offset) -> std::vector<CompletionItem>;

// A field's meaning, type, unit, range and default, for hover and completion.
auto DescribeField(const sema::FieldSchema& field) -> std::string;

}  // namespace avf::lsp
