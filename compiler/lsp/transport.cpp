#include "lsp/transport.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include <llvm/ADT/StringRef.h>

namespace avf::lsp {

namespace {

inline constexpr size_t kChunk = 1 << 16;

// The value of a `Content-Length:` field anywhere in `line` (a frame whose
// declared length was too short leaves the rest of its body before the next
// header), nullopt when the line names no length, and SIZE_MAX for one that
// is not a number.
auto ContentLength(llvm::StringRef line) -> std::optional<size_t> {
  size_t at = line.lower().rfind("content-length:");
  if (at == std::string::npos) return std::nullopt;
  llvm::StringRef digits = line.drop_front(at + std::strlen("content-length:")).trim();
  unsigned long long value = 0;
  if (digits.empty() || digits.getAsInteger(10, value)) return SIZE_MAX;
  return static_cast<size_t>(value);
}

}  // namespace

auto FrameReader::Fill() -> bool {
  if (pos_ > 0 && pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  }
  char chunk[kChunk];
  while (true) {
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }
}

auto FrameReader::HasPendingInput() -> bool {
  if (Available() > 0) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// One line without its `\r\n`; a line over kMaxHeaderLine is consumed to its
// end but not kept (`too_long`). False at the end of the input.
auto FrameReader::ReadLine(std::string& line, bool& too_long) -> bool {
  line.clear();
  too_long = false;
  while (true) {
    const char* start = buffer_.data() + pos_;
    const void* newline = std::memchr(start, '\n', Available());
    size_t take = newline ? static_cast<const char*>(newline) - start : Available();
    if (!too_long) line.append(start, std::min(take, kMaxHeaderLine + 1 - line.size()));
    if (line.size() > kMaxHeaderLine) {
      too_long = true;
      line.clear();
    }
    pos_ += take;
    if (newline) {
      ++pos_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    if (!Fill()) return false;
  }
}

auto FrameReader::ReadBody(size_t length, std::string& body) -> bool {
  body.clear();
  body.reserve(std::min(length, kMaxBody));
  while (body.size() < length) {
    if (Available() == 0 && !Fill()) return false;
    size_t take = std::min(Available(), length - body.size());
    body.append(buffer_, pos_, take);
    pos_ += take;
  }
  return true;
}

auto FrameReader::Skip(size_t length) -> bool {
  while (length > 0) {
    if (Available() == 0 && !Fill()) return false;
    size_t take = std::min(Available(), length);
    pos_ += take;
    length -= take;
  }
  return true;
}

auto FrameReader::Next() -> Frame {
  if (!Skip(std::exchange(skip_, 0))) return {};
  std::optional<size_t> length;
  std::string problem, line;
  bool in_header = false, too_long = false;
  while (true) {
    if (!ReadLine(line, too_long)) return {};
    if (too_long) {
      problem = "a header line longer than " + std::to_string(kMaxHeaderLine) + " bytes";
      in_header = true;
      continue;
    }
    if (line.empty()) {
      if (in_header) break;
      continue;  // blank lines between frames
    }
    in_header = true;
    if (std::optional<size_t> n = ContentLength(line)) {
      length = n;
      problem.clear();
    }
  }
  if (!length) return {Frame::Kind::Malformed, "", problem.empty() ? "a header without `Content-Length`" : problem};
  if (*length == SIZE_MAX) return {Frame::Kind::Malformed, "", "a `Content-Length` that is not a number"};
  if (*length > kMaxBody) {
    skip_ = *length;  // before the next frame, so that this one is answered at once
    return {Frame::Kind::Malformed, "",
            "a message of " + std::to_string(*length) + " bytes; the limit is " + std::to_string(kMaxBody)};
  }
  Frame frame;
  frame.kind = Frame::Kind::Message;
  if (!ReadBody(*length, frame.body)) return {};
  return frame;
}

auto WriteFrame(int fd, std::string_view body) -> bool {
  std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  frame.append(body);
  size_t written = 0;
  while (written < frame.size()) {
    ssize_t n = ::write(fd, frame.data() + written, frame.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace avf::lsp
