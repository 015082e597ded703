#include "io/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace avf::io {

namespace {

auto KindOf(mode_t mode) -> const char* {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

auto ErrnoError(int error) -> llvm::Error {
  return llvm::createStringError(std::error_code(error, std::generic_category()), "%s", std::strerror(error));
}

}  // namespace

auto RegularFile::Open(const std::string& path) -> llvm::Expected<RegularFile> {
  int fd = -1;
  do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoError(errno);
  RegularFile file(fd, 0);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoError(errno);
  if (!S_ISREG(st.st_mode)) {
    return llvm::createStringError(std::make_error_code(std::errc::invalid_argument), "it is %s, not a regular file",
                                   KindOf(st.st_mode));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return ErrnoError(errno);
  file.size_ = static_cast<uint64_t>(st.st_size);
  return file;
}

auto RegularFile::operator=(RegularFile&& other) noexcept -> RegularFile& {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_, size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

auto RegularFile::Release() -> int {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

}  // namespace avf::io
