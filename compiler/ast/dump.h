// --dump=ast: the syntax tree as an indented outline with line:col positions.
#pragma once

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include "ast/ast.h"

namespace avf::ast {

void DumpAst(const llvm::SourceMgr& sm, const File& file, llvm::raw_ostream& os);

}  // namespace avf::ast
