#include "interop/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include "io/regular_file.h"

namespace avf::interop {

namespace {

auto Fail(const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", why.c_str());
}

// The rename is durable once the folder's entry is on disk.
void SyncParent(const std::string& path) {
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

auto ReadAt(int fd, uint64_t offset, size_t size, uint8_t* into) -> llvm::Error {
  while (size > 0) {
    ssize_t n = ::pread(fd, into, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail(fmt::format("cannot read: {}", std::strerror(errno)));
    if (n == 0) return Fail("the file ended early (did it shrink while being read?)");
    into += n, offset += static_cast<uint64_t>(n), size -= static_cast<size_t>(n);
  }
  return llvm::Error::success();
}

auto WriteAll(int fd, const void* data, size_t size) -> bool {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;
    if (n <= 0) return false;
    p += n, size -= static_cast<size_t>(n);
  }
  return true;
}

auto WriteAtomically(const std::string& path, const char* what, llvm::function_ref<bool(int fd)> write) -> llvm::Error {
  int fd = -1;
  llvm::SmallString<256> tmp;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, tmp))
    return Fail(fmt::format("{}: cannot create a temporary file beside it: {}", path, ec.message()));
  std::string why;
  if (!write(fd) || ::fsync(fd) != 0) why = std::strerror(errno);
  if (::close(fd) != 0 && why.empty()) why = std::strerror(errno);
  if (why.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) why = std::strerror(errno);
  if (why.empty()) {
    SyncParent(path);
    return llvm::Error::success();
  }
  llvm::sys::fs::remove(tmp);
  return Fail(fmt::format("{}: cannot write {}: {}", path, what, why));
}

auto ReadSmallFile(const std::string& path, const char* what, uint64_t limit) -> llvm::Expected<std::string> {
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path);
  if (!file) return Fail(fmt::format("{}: cannot open {}: {}", path, what, llvm::toString(file.takeError())));
  if (file->size() > limit)
    return Fail(fmt::format("{}: {} bytes, more than {} takes ({} at most)", path, file->size(), what, limit));
  std::string text(file->size(), '\0');
  if (llvm::Error err = ReadAt(file->fd(), 0, text.size(), reinterpret_cast<uint8_t*>(text.data())))
    return Fail(fmt::format("{}: {}", path, llvm::toString(std::move(err))));
  return text;
}

}  // namespace avf::interop
