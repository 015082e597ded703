// Feeds arbitrary bytes through the front end as if they were a .avf file:
// source validation, lexing, parsing, semantic analysis and both renderers.
// Any crash, hang, leak or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include <llvm/Support/raw_ostream.h>

#include "diag/render.h"
#include "imports/imports.h"
#include "lex/lex.h"
#include "parse/parse.h"
#include "sema/sema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  avf::source::SourceSet sources;
  avf::diag::DiagnosticEngine diags;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto id = sources.AddBuffer("fuzz.avf", std::move(text), diags);
  if (id) {
    avf::imports::ModuleSet modules;
    modules.main_loaded = true;
    avf::lex::TokenizedBuffer tokens = avf::lex::Lex(sources, *id, diags);
    avf::ast::File file = avf::parse::Parse(tokens, diags);
    modules.modules.push_back({"fuzz.avf", *id, tokens.source(), std::move(file), true, false, {}});
    if (!diags.has_errors()) avf::sema::Analyze(modules, diags);
  }
  llvm::raw_null_ostream null;
  avf::diag::RenderText(sources.mgr(), diags, null, /*color=*/true);
  avf::diag::RenderJson(sources.mgr(), diags, null);
  return 0;
}
