#include "rendezvous/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "rendezvous/errors.h"
#include "rendezvous/socket.h"
#include "rendezvous/wire.h"

namespace avf::rendezvous {

namespace {

auto TrimTrailingSpace(std::string s) -> std::string {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

// Reads up to `max` bytes of an open descriptor; false with errno on failure.
auto ReadUpTo(int fd, size_t max, std::string* out) -> bool {
  char buf[4096];
  while (out->size() < max) {
    ssize_t r = ::read(fd, buf, std::min(sizeof buf, max - out->size()));
    if (r == 0) return true;
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out->append(buf, static_cast<size_t>(r));
  }
  return true;
}

}  // namespace

auto ValidateToken(std::string_view token, std::string_view origin) -> llvm::Error {
  if (token.size() < kMinTokenBytes) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("the job token from {} has {} byte{}; it needs at least {} (make one with "
                                 "`openssl rand -hex 32`)",
                                 origin, token.size(), token.size() == 1 ? "" : "s", kMinTokenBytes));
  }
  if (token.size() > wire::kMaxTokenBytes) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("the job token from {} has {} bytes; at most {} are allowed", origin, token.size(),
                                 wire::kMaxTokenBytes));
  }
  return llvm::Error::success();
}

auto ReadTokenFile(const std::string& path) -> llvm::Expected<std::string> {
  std::string origin = fmt::format("the file {}", path);
  // Non-blocking, so that a FIFO in place of the Secret cannot hold the open;
  // it is refused below (a regular file reads the same either way).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return MakeError(StoreErrc::kIo, fmt::format("cannot read the job token from {}: {} (is the job's Secret mounted?)",
                                                 path, net::ErrnoText(errno)));
  }
  net::Fd owner(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return MakeError(StoreErrc::kIo, fmt::format("cannot read the job token from {}: not a regular file", path));
  }
  std::string text;
  // One byte over the limit (plus room for a trailing newline) is enough to tell "too long".
  if (!ReadUpTo(fd, wire::kMaxTokenBytes + 3, &text)) {
    return MakeError(StoreErrc::kIo, fmt::format("cannot read the job token from {}: {}", path, net::ErrnoText(errno)));
  }
  text = TrimTrailingSpace(std::move(text));
  if (auto err = ValidateToken(text, origin)) return err;
  return text;
}

auto TokenFromEnvironment(const char* file_var, const char* value_var) -> llvm::Expected<std::string> {
  if (const char* path = std::getenv(file_var); path && *path) return ReadTokenFile(path);
  if (const char* value = std::getenv(value_var); value && *value) {
    std::string token = TrimTrailingSpace(value);
    if (auto err = ValidateToken(token, fmt::format("${}", value_var))) return err;
    return token;
  }
  return MakeError(StoreErrc::kInvalidArgument,
                   fmt::format("no job token: set {} to the path of the mounted Secret, or {} to the token itself",
                               file_var, value_var));
}

auto MakeRandomToken() -> llvm::Expected<std::string> {
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError(StoreErrc::kIo, fmt::format("cannot open /dev/urandom: {}", net::ErrnoText(errno)));
  net::Fd owner(fd);
  std::string bytes;
  if (!ReadUpTo(fd, 32, &bytes)) {
    return MakeError(StoreErrc::kIo, fmt::format("cannot read /dev/urandom: {}", net::ErrnoText(errno)));
  }
  if (bytes.size() != 32) {
    return MakeError(StoreErrc::kIo, fmt::format("/dev/urandom gave {} bytes; 32 were expected", bytes.size()));
  }
  std::string hex;
  for (char c : bytes) hex += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return hex;
}

auto TokensEqual(std::string_view expected, std::string_view presented) -> bool {
  // volatile keeps the compiler from turning the loop into an early-exit memcmp.
  volatile unsigned char diff = expected.size() == presented.size() ? 0 : 1;
  for (size_t i = 0; i < presented.size(); ++i) {
    unsigned char e = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    diff = static_cast<unsigned char>(diff | (e ^ static_cast<unsigned char>(presented[i])));
  }
  return diff == 0;
}

}  // namespace avf::rendezvous
