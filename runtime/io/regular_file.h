// Opening the files avf-run reads (plans, token shards, checkpoints): only a
// regular file is accepted. A FIFO in place of one would block open() until
// a writer appears, and a device or socket is no file of ours, so the file is
// opened with O_NONBLOCK and checked with fstat on the open descriptor (no
// race between a stat and the open), then switched back to blocking reads.
#pragma once

#include <cstdint>
#include <string>

#include <llvm/Support/Error.h>

namespace avf::io {

class RegularFile {
 public:
  // The error holds the reason alone, for the caller to prefix with the path
  // and what the file is: "No such file or directory", "it is a FIFO (named
  // pipe), not a regular file".
  static auto Open(const std::string& path) -> llvm::Expected<RegularFile>;

  RegularFile(RegularFile&& other) noexcept : fd_(other.fd_), size_(other.size_) { other.fd_ = -1; }
  auto operator=(RegularFile&& other) noexcept -> RegularFile&;
  RegularFile(const RegularFile&) = delete;
  auto operator=(const RegularFile&) -> RegularFile& = delete;
  ~RegularFile();

  auto fd() const -> int { return fd_; }
  // The size when it was opened.
  auto size() const -> uint64_t { return size_; }
  // Gives up ownership: the caller closes the descriptor.
  auto Release() -> int;

 private:
  RegularFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace avf::io
