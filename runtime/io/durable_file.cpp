#include "io/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <llvm/Support/Path.h>

namespace avf::io {

namespace {

auto Fail(const std::string& path, const char* what) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                 fmt::format("{}: cannot {}: {}", path, what, std::strerror(errno)).c_str());
}

}  // namespace

auto DurableFile::Create(const std::string& path) -> llvm::Expected<DurableFile> {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(tmp, "create the file");
  return DurableFile(path, fd);
}

DurableFile::DurableFile(DurableFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), written_(other.written_) {
  other.fd_ = -1;
}

DurableFile::~DurableFile() {
  if (fd_ < 0) return;
  close(fd_);
  std::remove((path_ + ".tmp").c_str());
}

auto DurableFile::Write(llvm::ArrayRef<uint8_t> bytes) -> llvm::Error {
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail(path_ + ".tmp", "write");
    p += n;
    left -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
  return llvm::Error::success();
}

auto DurableFile::Commit() -> llvm::Error {
  std::string tmp = path_ + ".tmp";
  if (fsync(fd_) != 0) return Fail(tmp, "flush the file to disk");
  int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) {
    std::remove(tmp.c_str());
    return Fail(tmp, "close the file");
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    llvm::Error e = Fail(path_, "rename the written file into place");
    std::remove(tmp.c_str());
    return e;
  }
  llvm::SmallString<256> dir(path_);
  llvm::sys::path::remove_filename(dir);
  return SyncDirectory(dir.empty() ? "." : std::string(dir));
}

auto WriteDurably(const std::string& path, llvm::ArrayRef<uint8_t> bytes) -> llvm::Error {
  llvm::Expected<DurableFile> file = DurableFile::Create(path);
  if (!file) return file.takeError();
  if (llvm::Error e = file->Write(bytes)) return e;
  return file->Commit();
}

auto WriteDurably(const std::string& path, llvm::StringRef text) -> llvm::Error {
  return WriteDurably(path, llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

auto SyncDirectory(const std::string& dir) -> llvm::Error {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Fail(dir, "open the directory");
  int rc = fsync(fd);
  // Some file systems cannot fsync a directory (EINVAL): nothing more can be done there.
  bool failed = rc != 0 && errno != EINVAL;
  llvm::Error e = failed ? Fail(dir, "flush the directory to disk") : llvm::Error::success();
  close(fd);
  return e;
}

}  // namespace avf::io
