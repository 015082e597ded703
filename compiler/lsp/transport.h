// The base protocol of LSP: each message is a header block
// (`Content-Length: N`, other fields ignored, ended by an empty line) and N
// bytes of JSON. The reader never trusts the peer: a header line longer than
// kMaxHeaderLine or a length beyond kMaxBody is skipped and reported as a
// malformed frame, and a header without a usable length is reported the
// same way; it resynchronises on the next line that names a length.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace avf::lsp {

inline constexpr size_t kMaxHeaderLine = 64 << 10;
// Larger than source::kMaxFileBytes, so that an allowed file fits in one
// message with its JSON escapes.
inline constexpr size_t kMaxBody = 160 << 20;

struct Frame {
  enum class Kind { Message, Malformed, End };
  Kind kind = Kind::End;
  std::string body;     // Message: the JSON text
  std::string problem;  // Malformed: what was wrong, for the error response
};

class FrameReader {
 public:
  explicit FrameReader(int fd) : fd_(fd) {}

  // The next frame; End once the input is closed.
  auto Next() -> Frame;
  // True when a frame (or part of one) can be read without waiting.
  auto HasPendingInput() -> bool;

 private:
  auto Fill() -> bool;
  auto ReadLine(std::string& line, bool& too_long) -> bool;
  auto ReadBody(size_t length, std::string& body) -> bool;
  auto Skip(size_t length) -> bool;
  auto Available() const -> size_t { return buffer_.size() - pos_; }

  int fd_;
  std::string buffer_;
  size_t pos_ = 0;
  size_t skip_ = 0;  // the body of a frame refused as too large
};

// Writes one frame; false when the output is closed.
auto WriteFrame(int fd, std::string_view body) -> bool;

}  // namespace avf::lsp
