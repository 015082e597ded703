#include "rendezvous/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "rendezvous/errors.h"

namespace avf::rendezvous::net {

auto Fd::operator=(Fd&& o) noexcept -> Fd& {
  if (this != &o) {
    Reset();
    fd_ = o.release();
  }
  return *this;
}

auto Fd::release() -> int {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void Fd::Reset() {
  if (fd_ >= 0) ::close(fd_);  // not retried on EINTR: on Linux the descriptor is gone either way
  fd_ = -1;
}

auto ErrnoText(int err) -> std::string {
  char buf[256];
  // The GNU strerror_r returns the text (possibly not in buf).
  return std::string(strerror_r(err, buf, sizeof buf));
}

auto PollTimeoutMs(Deadline deadline) -> int {
  auto now = Clock::now();
  if (deadline <= now) return 0;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
  auto ms = (us + 999) / 1000;  // round up: never spin on a sub-millisecond remainder
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

namespace {

// Waits for `events` on fd; false on timeout. EINTR restarts with the time left.
auto PollOne(int fd, short events, Deadline deadline, int* err) -> bool {
  for (;;) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, PollTimeoutMs(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) {
      *err = errno;
      return true;  // the following send/recv reports the error
    }
  }
}

}  // namespace

auto SendNow(int fd, const char* data, size_t n) -> ssize_t {
  for (;;) {
    ssize_t r = ::send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

auto RecvNow(int fd, char* out, size_t n) -> ssize_t {
  for (;;) {
    ssize_t r = ::recv(fd, out, n, MSG_DONTWAIT);
    if (r > 0) return r;
    if (r == 0) return -2;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

auto SendAll(int fd, std::string_view data, Deadline deadline) -> IoResult {
  IoResult res;
  while (res.done < data.size()) {
    ssize_t r = SendNow(fd, data.data() + res.done, data.size() - res.done);
    if (r < 0) return {IoResult::kError, res.done, errno};
    if (r > 0) {
      res.done += static_cast<size_t>(r);
      continue;
    }
    int err = 0;
    if (!PollOne(fd, POLLOUT, deadline, &err)) return {IoResult::kTimeout, res.done, 0};
    if (err != 0) return {IoResult::kError, res.done, err};
  }
  return res;
}

auto RecvExact(int fd, char* out, size_t n, Deadline deadline) -> IoResult {
  IoResult res;
  while (res.done < n) {
    ssize_t r = RecvNow(fd, out + res.done, n - res.done);
    if (r == -2) return {IoResult::kClosed, res.done, 0};
    if (r < 0) return {IoResult::kError, res.done, errno};
    if (r > 0) {
      res.done += static_cast<size_t>(r);
      continue;
    }
    int err = 0;
    if (!PollOne(fd, POLLIN, deadline, &err)) return {IoResult::kTimeout, res.done, 0};
    if (err != 0) return {IoResult::kError, res.done, err};
  }
  return res;
}

auto JoinHostPort(std::string_view host, uint16_t port) -> std::string {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

auto PeerName(int fd) -> std::string {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  std::string_view h = host;
  if (h.starts_with("::ffff:") && h.find('.') != std::string_view::npos)
    h.remove_prefix(7);  // IPv4 on a dual-stack socket
  return JoinHostPort(h, static_cast<uint16_t>(std::atoi(serv)));
}

auto SetNonBlocking(int fd) -> bool {
  int flags = ::fcntl(fd, F_GETFL, 0);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

void TuneConnection(int fd) {
  int one = 1, idle = 60, interval = 10, count = 6;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { ::freeaddrinfo(ai); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo, or the reason it failed in words.
auto Resolve(const char* host, uint16_t port, int flags, std::string* why) -> AddrInfoPtr {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host, service.c_str(), &hints, &res);
  if (rc != 0) {
    *why = fmt::format("cannot resolve '{}': {}", host ? host : "",
                       rc == EAI_SYSTEM ? ErrnoText(errno) : gai_strerror(rc));
    return nullptr;
  }
  return AddrInfoPtr(res);
}

// socket + SO_REUSEADDR + bind + listen on one address; errno on failure.
auto BindListen(int family, const sockaddr* addr, socklen_t len, bool dual_stack, int* err) -> Fd {
  Fd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    *err = errno;
    return {};
  }
  int one = 1, zero = 0;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (family == AF_INET6 && dual_stack) ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  if (::bind(fd.get(), addr, len) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
    *err = errno;
    return {};
  }
  return fd;
}

auto BoundPort(int fd) -> uint16_t {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

auto ListenAnywhere(uint16_t port, int* err) -> Fd {
  sockaddr_in6 a6{};
  a6.sin6_family = AF_INET6;
  a6.sin6_addr = in6addr_any;
  a6.sin6_port = htons(port);
  Fd fd = BindListen(AF_INET6, reinterpret_cast<sockaddr*>(&a6), sizeof a6, true, err);
  if (fd.valid()) return fd;
  sockaddr_in a4{};
  a4.sin_family = AF_INET;
  a4.sin_addr.s_addr = htonl(INADDR_ANY);
  a4.sin_port = htons(port);
  return BindListen(AF_INET, reinterpret_cast<sockaddr*>(&a4), sizeof a4, false, err);
}

}  // namespace

auto Listen(const std::string& host, uint16_t port) -> llvm::Expected<Listener> {
  int err = 0;
  std::string why;
  Fd fd;
  if (host.empty()) {
    fd = ListenAnywhere(port, &err);
  } else if (AddrInfoPtr ai = Resolve(host.c_str(), port, AI_PASSIVE, &why)) {
    for (addrinfo* a = ai.get(); a && !fd.valid(); a = a->ai_next) {
      fd = BindListen(a->ai_family, a->ai_addr, a->ai_addrlen, false, &err);
    }
  }
  if (!fd.valid()) {
    if (why.empty()) why = ErrnoText(err);
    return MakeError(StoreErrc::kIo, fmt::format("cannot listen on {} for the rendezvous store: {}",
                                                 JoinHostPort(host.empty() ? "*" : host, port), why));
  }
  uint16_t bound = BoundPort(fd.get());
  return Listener{std::move(fd), bound};
}

namespace {

// One connect to one address, bounded by `deadline`; errno on failure.
auto ConnectAddr(const addrinfo* a, Deadline deadline, int* err) -> Fd {
  Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
  if (!fd.valid()) {
    *err = errno;
    return {};
  }
  if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS && errno != EINTR) {
    *err = errno;
    return {};
  }
  int perr = 0;
  if (!PollOne(fd.get(), POLLOUT, deadline, &perr)) {
    *err = ETIMEDOUT;
    return {};
  }
  int so_error = perr;
  socklen_t len = sizeof so_error;
  if (so_error == 0 && ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
  if (so_error != 0) {
    *err = so_error;
    return {};
  }
  return fd;
}

// Resolves and tries every address once; `why` says what failed last.
auto ConnectOnce(const std::string& host, uint16_t port, Deadline deadline, std::string* why) -> Fd {
  AddrInfoPtr ai = Resolve(host.c_str(), port, 0, why);
  if (!ai) return {};
  // One attempt may not eat the whole deadline: a SYN into a not-yet-routed pod
  // IP is retried by the kernel for minutes, and a fresh lookup may do better.
  Deadline attempt = std::min(deadline, Clock::now() + std::chrono::seconds(3));
  int err = 0;
  for (const addrinfo* a = ai.get(); a; a = a->ai_next) {
    Fd fd = ConnectAddr(a, attempt, &err);
    if (fd.valid()) return fd;
  }
  *why = ErrnoText(err);
  return {};
}

}  // namespace

auto ConnectWithRetry(const std::string& host, uint16_t port, Deadline deadline, ConnectStats* stats)
    -> llvm::Expected<Fd> {
  auto start = Clock::now();
  std::minstd_rand jitter(static_cast<unsigned>(std::random_device{}() ^ static_cast<unsigned>(::getpid())));
  auto delay = std::chrono::milliseconds(10);
  std::string why;
  int attempts = 0;
  for (;;) {
    ++attempts;
    Fd fd = ConnectOnce(host, port, deadline, &why);
    if (fd.valid()) {
      TuneConnection(fd.get());
      if (stats) stats->attempts = attempts;
      return fd;
    }
    auto now = Clock::now();
    if (now >= deadline) break;
    // +-25% so that thousands of ranks do not retry in lockstep.
    auto ms = delay.count() * (75 + static_cast<int64_t>(jitter() % 51)) / 100;
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(ms), deadline - now));
    delay = std::min(delay * 2, std::chrono::milliseconds(1000));
  }
  if (stats) stats->attempts = attempts;
  auto total = std::chrono::round<std::chrono::milliseconds>(deadline - start);
  return MakeError(
      StoreErrc::kUnreachable,
      fmt::format("cannot reach the rendezvous store at {} after {} ({} attempt{}): {} (is rank 0 "
                  "running, and are MASTER_ADDR and MASTER_PORT the same on every rank?)",
                  JoinHostPort(host, port), FormatSeconds(total), attempts, attempts == 1 ? "" : "s", why));
}

}  // namespace avf::rendezvous::net
