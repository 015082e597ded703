#include "lsp/text_position.h"

#include <algorithm>

namespace avf::lsp {

namespace {

// Bytes of the UTF-8 sequence that `lead` starts; a stray continuation or
// invalid byte counts as one (documents arrive as JSON strings, so they are
// valid UTF-8, but offsets must never run past the text).
auto SequenceLength(unsigned char lead) -> size_t {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

auto Units(size_t bytes, Encoding encoding) -> int64_t {
  if (encoding == Encoding::Utf8) return static_cast<int64_t>(bytes);
  return bytes == 4 ? 2 : 1;
}

}  // namespace

LineIndex::LineIndex(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (size_t i = text.find('\n'); i != std::string_view::npos; i = text.find('\n', i + 1)) starts_.push_back(i + 1);
}

auto LineIndex::LineEnd(size_t line) const -> size_t {
  return line + 1 < starts_.size() ? starts_[line + 1] - 1 : text_.size();
}

auto LineIndex::Offset(Position p, Encoding encoding) const -> std::optional<size_t> {
  if (p.line < 0 || p.character < 0 || static_cast<uint64_t>(p.line) >= starts_.size()) return std::nullopt;
  size_t offset = starts_[p.line];
  size_t end = LineEnd(p.line);
  int64_t units = 0;
  while (offset < end && units < p.character) {
    size_t length = std::min(SequenceLength(static_cast<unsigned char>(text_[offset])), end - offset);
    int64_t step = Units(length, encoding);
    if (units + step > p.character) break;  // inside a surrogate pair: its start
    units += step;
    offset += length;
  }
  return offset;
}

auto LineIndex::PositionOf(size_t offset, Encoding encoding) const -> Position {
  offset = std::min(offset, text_.size());
  size_t line = std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1;
  Position p{static_cast<int64_t>(line), 0};
  if (encoding == Encoding::Utf8) {
    p.character = static_cast<int64_t>(offset - starts_[line]);
    return p;
  }
  for (size_t i = starts_[line]; i < offset;) {
    size_t length = std::min(SequenceLength(static_cast<unsigned char>(text_[i])), offset - i);
    p.character += Units(length, encoding);
    i += length;
  }
  return p;
}

auto ApplyChange(std::string& text, const Change& change, Encoding encoding) -> bool {
  if (!change.range) {
    text = change.text;
    return true;
  }
  LineIndex index(text);
  std::optional<size_t> begin = index.Offset(change.range->start, encoding);
  std::optional<size_t> end = index.Offset(change.range->end, encoding);
  if (!begin || !end || *end < *begin) return false;
  text.replace(*begin, *end - *begin, change.text);
  return true;
}

}  // namespace avf::lsp
