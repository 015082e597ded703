// Renders collected diagnostics for people (clang style) or for editors
// (JSON lines). Both print in source order: file load order, then offset.
#pragma once

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include "diag/diagnostic.h"

namespace avf::diag {

// Diagnostics in the order they are shown: by file, then by position; those
// without a location come first, in the order they were reported.
auto SortedForOutput(const llvm::SourceMgr& sm, const DiagnosticEngine& engine) -> std::vector<const Diagnostic*>;

void RenderText(const llvm::SourceMgr& sm, const DiagnosticEngine& engine, llvm::raw_ostream& os, bool color);

void RenderJson(const llvm::SourceMgr& sm, const DiagnosticEngine& engine, llvm::raw_ostream& os);

// 1-based line and byte column of `loc`, and the file it is in; {"", 0, 0} for
// an invalid location.
struct Position {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
};
auto PositionOf(const llvm::SourceMgr& sm, llvm::SMLoc loc) -> Position;

}  // namespace avf::diag
