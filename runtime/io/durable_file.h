// Writing files that must survive a crash or a power loss once a later file
// says they are there (a checkpoint's data before its index and COMMITTED):
// written under a temporary name, fsynced, renamed into place, and the
// directory fsynced so that the rename itself is on disk.
#pragma once

#include <cstdint>
#include <string>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

namespace avf::io {

// A file being written: `path`.tmp until Commit renames it to `path`. A
// writer destroyed without Commit removes the temporary file.
class DurableFile {
 public:
  static auto Create(const std::string& path) -> llvm::Expected<DurableFile>;
  DurableFile(DurableFile&& other) noexcept;
  auto operator=(DurableFile&&) -> DurableFile& = delete;
  DurableFile(const DurableFile&) = delete;
  auto operator=(const DurableFile&) -> DurableFile& = delete;
  ~DurableFile();

  auto Write(llvm::ArrayRef<uint8_t> bytes) -> llvm::Error;
  // fsync, close, rename to the final name, fsync the directory.
  auto Commit() -> llvm::Error;
  auto written() const -> uint64_t { return written_; }
  // For a writer that writes to the descriptor itself (an encrypting one).
  auto fd() const -> int { return fd_; }
  auto path() const -> const std::string& { return path_; }

 private:
  DurableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

// The whole of `bytes` as the file `path`, durably.
auto WriteDurably(const std::string& path, llvm::ArrayRef<uint8_t> bytes) -> llvm::Error;
auto WriteDurably(const std::string& path, llvm::StringRef text) -> llvm::Error;
// fsync of a directory: what makes a rename or a new file in it durable.
auto SyncDirectory(const std::string& dir) -> llvm::Error;

}  // namespace avf::io
