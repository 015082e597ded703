// POSIX TCP for the rendezvous store: an owning descriptor, deadline-bounded
// reads and writes (poll, EINTR retried, MSG_NOSIGNAL so a closed peer is an
// error and not SIGPIPE), a listener and a connect that retries until a
// deadline. IPv4 and IPv6 through getaddrinfo.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <llvm/Support/Error.h>

namespace avf::rendezvous::net {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Owns one file descriptor; closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  auto operator=(Fd&& o) noexcept -> Fd&;
  Fd(const Fd&) = delete;
  auto operator=(const Fd&) -> Fd& = delete;
  ~Fd() { Reset(); }
  auto get() const -> int { return fd_; }
  auto valid() const -> bool { return fd_ >= 0; }
  auto release() -> int;
  void Reset();

 private:
  int fd_ = -1;
};

// The outcome of a deadline-bounded transfer: how many bytes moved, and why it
// stopped when it did not move them all.
struct IoResult {
  enum Kind { kOk, kTimeout, kClosed, kError } kind = kOk;
  size_t done = 0;
  int err = 0;  // errno, for kError
};

// Writes all of `data` (the socket may be blocking or not).
auto SendAll(int fd, std::string_view data, Deadline deadline) -> IoResult;
// Reads exactly `n` bytes into `out`.
auto RecvExact(int fd, char* out, size_t n, Deadline deadline) -> IoResult;

// A non-blocking send / recv of what fits now: bytes moved, 0 when it would
// block; -1 with errno set on an error; recv returns -2 on an orderly close.
auto SendNow(int fd, const char* data, size_t n) -> ssize_t;
auto RecvNow(int fd, char* out, size_t n) -> ssize_t;

// Milliseconds from now until `deadline`, clamped to [0, INT_MAX] for poll.
auto PollTimeoutMs(Deadline deadline) -> int;

// "host:port", with IPv6 literals in brackets.
auto JoinHostPort(std::string_view host, uint16_t port) -> std::string;
// The peer's numeric address as "host:port" ("?" when unknown).
auto PeerName(int fd) -> std::string;

struct Listener {
  Fd fd;
  uint16_t port = 0;  // the bound port (the one asked for, or the kernel's pick for 0)
};

// Binds host:port (empty host: every interface, IPv6 dual-stack when possible)
// with SO_REUSEADDR, listens, and makes the socket non-blocking.
auto Listen(const std::string& host, uint16_t port) -> llvm::Expected<Listener>;

struct ConnectStats {
  int attempts = 0;
};

// Connects to host:port, retrying refused/unreachable/unresolvable with
// exponential backoff (10 ms doubling to 1 s, jittered) until `deadline`. The
// returned socket is non-blocking with TCP_NODELAY and keepalive. Fails with
// kUnreachable: "cannot reach the rendezvous store at HOST:PORT after N s
// (K attempts): <last error>". The name lookup itself (getaddrinfo) is not
// bounded by the deadline: a resolver that hangs delays it by its own timeout.
auto ConnectWithRetry(const std::string& host, uint16_t port, Deadline deadline, ConnectStats* stats = nullptr)
    -> llvm::Expected<Fd>;

// TCP_NODELAY, SO_KEEPALIVE (idle 60 s, probes every 10 s, 6 probes): a peer
// whose machine vanished is noticed in about two minutes.
void TuneConnection(int fd);
auto SetNonBlocking(int fd) -> bool;

// The errno text ("Connection refused").
auto ErrnoText(int err) -> std::string;

}  // namespace avf::rendezvous::net
