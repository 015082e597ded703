#include "run/run_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>

namespace avf::run {

namespace {

auto Fail(const std::string& message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// A descriptor this process already has open on the file of `st` (one its
// launcher opened and locked before starting it), if any.
auto InheritedDescriptor(const struct stat& st) -> std::optional<int> {
  DIR* fds = opendir("/proc/self/fd");
  if (!fds) return std::nullopt;
  std::optional<int> found;
  int own = dirfd(fds);
  while (dirent* entry = readdir(fds)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    struct stat other {};
    if (*end != '\0' || fd == own || fstat(static_cast<int>(fd), &other) != 0) continue;
    if (other.st_dev == st.st_dev && other.st_ino == st.st_ino) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(fds);
  return found;
}

// The pid the holder wrote into the lock file, or "" when unreadable.
auto HolderPid(int fd) -> std::string {
  char buf[32] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  std::string text(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.find_first_not_of("0123456789") == std::string::npos ? text : "";
}

void WritePid(int fd) {
  std::string pid = fmt::format("{}\n", getpid());
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
}

}  // namespace

auto LockDirectory(const std::string& dir, llvm::StringRef flag) -> llvm::Error {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    return Fail(fmt::format("{}: {}", dir, ec.message()));
  }
  std::string path = dir + "/" + kLockFileName;
  struct stat st {};
  std::optional<int> inherited = stat(path.c_str(), &st) == 0 ? InheritedDescriptor(st) : std::nullopt;
  // Not O_CLOEXEC: the ranks this process starts hold the lock with it.
  int fd = inherited ? *inherited : open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) return Fail(fmt::format("{}: cannot open the lock file: {}", path, std::strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    if (!inherited) WritePid(fd);
    return llvm::Error::success();
  }
  int error = errno;
  std::string holder = HolderPid(fd);
  if (!inherited) close(fd);
  if (error != EWOULDBLOCK) return Fail(fmt::format("{}: cannot lock: {}", path, std::strerror(error)));
  return Fail(
      fmt::format("{} is in use by a running job ({}{} is locked); wait for it to end or stop it, or pass "
                  "another {}",
                  dir, holder.empty() ? "" : fmt::format("started by process {}; ", holder), path, flag));
}

}  // namespace avf::run
