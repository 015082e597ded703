// protocol.h values <-> LSP's JSON (llvm::json). Reading is strict about
// types: a position that is not two non-negative integers is nullopt, and
// the server answers InvalidParams.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <llvm/Support/JSON.h>

#include "lsp/protocol.h"

namespace avf::lsp {

// A string for JSON: invalid UTF-8 (which llvm::json refuses) is replaced.
auto JsonText(std::string text) -> llvm::json::Value;

auto ToJson(const Range& r) -> llvm::json::Value;
auto ToJson(const Location& l) -> llvm::json::Value;
auto ToJson(const TextEdit& e) -> llvm::json::Value;
auto ToJson(const Diagnostic& d) -> llvm::json::Value;
auto ToJson(const Symbol& s) -> llvm::json::Value;
auto ToJson(const HoverText& h) -> llvm::json::Value;
auto ToJson(const CompletionItem& c) -> llvm::json::Value;
// A diagnostic's fix as a quick-fix code action.
auto CodeAction(const Diagnostic& d) -> llvm::json::Value;

auto PositionFrom(const llvm::json::Value* v) -> std::optional<Position>;
auto RangeFrom(const llvm::json::Value* v) -> std::optional<Range>;
// didChange's contentChanges; nullopt when one is malformed.
auto ChangesFrom(const llvm::json::Value* v) -> std::optional<std::vector<Change>>;
// params.textDocument.uri, or "".
auto DocumentUri(const llvm::json::Object& params) -> std::string;

}  // namespace avf::lsp
