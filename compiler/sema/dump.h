// --dump=sema: the checked declarations of the main file with every field's
// value, unit and origin (written, inherited from a base, or defaulted).
#pragma once

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include "sema/value.h"

namespace avf::sema {

void DumpProgram(const llvm::SourceMgr& sm, const Program& program, unsigned main_buffer, llvm::raw_ostream& os);

// A value as .avf source text: `80GiB`, `hot / "ckpt"`, `secret("x")`.
auto FormatValue(const Value& v, const Program& program) -> std::string;

}  // namespace avf::sema
