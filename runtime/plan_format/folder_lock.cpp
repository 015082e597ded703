#include "plan_format/folder_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

namespace avf::plan_format {

namespace {

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
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
}

}  // namespace

auto LockFolder(const std::string& dir) -> FolderLock {
  FolderLock lock;
  lock.path = dir + "/" + kLockFileName;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    lock.error = dir + ": " + ec.message();
    return lock;
  }
  struct stat st {};
  std::optional<int> inherited = stat(lock.path.c_str(), &st) == 0 ? InheritedDescriptor(st) : std::nullopt;
  // Not O_CLOEXEC: the processes this one starts hold the lock with it.
  int fd = inherited ? *inherited : open(lock.path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) {
    lock.error = lock.path + ": cannot open the lock file: " + std::strerror(errno);
    return lock;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    if (!inherited) WritePid(fd);
    lock.state = FolderLock::State::Locked;
    return lock;
  }
  int error = errno;
  lock.holder = HolderPid(fd);
  if (!inherited) close(fd);
  if (error != EWOULDBLOCK) {
    lock.error = lock.path + ": cannot lock: " + std::strerror(error);
    return lock;
  }
  lock.state = FolderLock::State::InUse;
  return lock;
}

auto HolderClause(const FolderLock& lock) -> std::string {
  return lock.holder.empty() ? "" : "started by process " + lock.holder + "; ";
}

auto LockProblem(const std::string& dir, const FolderLock& lock, std::string_view flag) -> std::string {
  if (lock.state == FolderLock::State::Locked) return "";
  if (lock.state == FolderLock::State::Failed) return lock.error;
  return dir + " is in use by a running job (" + HolderClause(lock) + lock.path +
         " is locked); wait for it to end or stop it, or pass another " + std::string(flag);
}

}  // namespace avf::plan_format
