// --verify-diagnostics: compares what the compiler reported with the
// `// expected-error {{text}}` comments in the checked files (clang -verify).
//
//   // expected-error {{text}}        on this line
//   // expected-warning@+1 {{text}}   on the next line (@-N: N lines above)
//   // expected-note@7 {{text}}       on line 7
//   // expected-no-diagnostics        the file must check clean
//
// `text` must occur in the message followed by ` [CODE]`, so `{{[E0501]}}`
// matches a code alone.
#pragma once

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include "diag/diagnostic.h"

namespace avf::diag {

// True when every expectation was seen and nothing unexpected was reported;
// otherwise prints the differences to `os`.
auto VerifyDiagnostics(const llvm::SourceMgr& sm, const DiagnosticEngine& engine, llvm::raw_ostream& os) -> bool;

}  // namespace avf::diag
