#include "driver/format_files.h"

#include <algorithm>

#include <llvm/Support/raw_ostream.h>

#include "driver/outputs.h"
#include "format/format.h"
#include "lex/lex.h"
#include "parse/parse.h"

namespace avf::driver {

namespace {

// The file's canonical form, or nullopt after its errors were reported.
auto Formatted(const std::string& path, source::SourceSet& sources, diag::DiagnosticEngine& diags)
    -> std::optional<std::pair<std::string, std::string>> {
  std::optional<unsigned> id = sources.LoadFile(path, diags);
  if (!id) return std::nullopt;
  lex::TokenizedBuffer tokens = lex::Lex(sources, *id, diags);
  if (diags.has_errors()) return std::nullopt;
  parse::Parse(tokens, diags);
  if (diags.has_errors()) return std::nullopt;
  return std::pair{sources.Text(*id).str(), format::FormatFile(tokens)};
}

}  // namespace

auto FormatFiles(const Options& o, const FinishFile& finish) -> int {
  int status = 0;
  for (const std::string& path : o.format_files) {
    source::SourceSet sources;
    diag::DiagnosticEngine diags;
    diags.set_error_limit(o.error_limit);
    auto texts = Formatted(path, sources, diags);
    if (texts && o.format_in_place && texts->first != texts->second) {
      WriteOutputFiles({{path, texts->second}}, diags);
    }
    status = std::max(status, finish(sources, diags));
    if (!texts) continue;
    if (o.format_check && texts->first != texts->second) {
      llvm::outs() << path << "\n";
      status = std::max(status, 1);
    } else if (!o.format_in_place && !o.format_check) {
      llvm::outs() << texts->second;
    }
  }
  return status;
}

}  // namespace avf::driver
