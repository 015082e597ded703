// Byte offsets into a document <-> LSP positions (line, character), where a
// character counts UTF-16 code units or bytes (Encoding). The compiler's
// columns are bytes; every position that crosses the protocol goes through
// here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lsp/protocol.h"

namespace avf::lsp {

class LineIndex {
 public:
  explicit LineIndex(std::string_view text);

  // nullopt for a negative position or a line past the last; a character
  // past the end of its line means the end of the line (as LSP says).
  auto Offset(Position p, Encoding encoding) const -> std::optional<size_t>;
  // An offset past the end of the text is its end.
  auto PositionOf(size_t offset, Encoding encoding) const -> Position;
  auto line_count() const -> size_t { return starts_.size(); }

 private:
  auto LineEnd(size_t line) const -> size_t;
  std::string_view text_;
  std::vector<size_t> starts_;
};

// Applies one didChange edit; false (text unchanged) when its range is not
// in the document or ends before it starts.
auto ApplyChange(std::string& text, const Change& change, Encoding encoding) -> bool;

}  // namespace avf::lsp
