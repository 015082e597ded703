// `aviflowc explain CODE`: the long explanation of each diagnostic code, as
// written in docs/explain/CODE.md and compiled into the binary
// (tools/gen_explanations.py), and the list of every code.
#pragma once

#include <string_view>

#include <llvm/Support/raw_ostream.h>

namespace avf::explain {

struct Explanation {
  std::string_view code;   // as in the registry: "E0501"
  std::string_view title;  // the file's first line after `# CODE: `
  std::string_view text;   // the whole markdown file
};

// The explanation of a registry code (any letter case), or nullptr.
auto FindExplanation(std::string_view code) -> const Explanation*;

// Prints the explanation of `code` (any case, `[E0501]` as pasted from a
// diagnostic too) and returns 0; for anything else says on `err` that it is
// not a code, names the nearest ones, and returns 1.
auto Explain(std::string_view code, llvm::raw_ostream& out, llvm::raw_ostream& err) -> int;

// One line per registry code: the code, its severity and its title.
void ListCodes(llvm::raw_ostream& out);

}  // namespace avf::explain
