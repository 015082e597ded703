// Source ranges of an analysis -> protocol locations: the document's own
// buffer keeps the document's URI, every other (an import, the stdlib) gets
// its file's.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <llvm/Support/SMLoc.h>

#include "lsp/analysis.h"
#include "lsp/protocol.h"
#include "lsp/text_position.h"

namespace avf::lsp {

class Locator {
 public:
  Locator(const Analysis& analysis, std::string main_uri, Encoding encoding)
      : analysis_(analysis), main_uri_(std::move(main_uri)), encoding_(encoding) {}

  // nullopt for an invalid range or one outside every buffer.
  auto LocationOf(llvm::SMRange range) -> std::optional<Location>;
  auto UriOf(unsigned buffer_id) const -> std::string;
  auto main_uri() const -> const std::string& { return main_uri_; }

 private:
  auto IndexOf(unsigned buffer_id) -> const LineIndex&;
  const Analysis& analysis_;
  std::string main_uri_;
  Encoding encoding_;
  std::map<unsigned, LineIndex> indexes_;
};

}  // namespace avf::lsp
