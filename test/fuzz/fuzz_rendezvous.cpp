// Feeds arbitrary bytes to the rendezvous store as one TCP peer would send
// them: frames of hellos and requests, decoded by the store's real server
// thread. Each input is one connection (connect, send, close the sending
// side, read until the store closes). A crash, a sanitizer report, or a store
// that keeps a closed peer's connection open is a bug. The seeds (corpus/
// rendezvous) hold the job token (seed_shapes.h), so mutations get past the
// hello.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "rendezvous/store.h"
#include "seed_shapes.h"

namespace {

constexpr int kCloseWithinMs = 5000;

auto Server() -> avf::rendezvous::StoreServer& {
  static std::unique_ptr<avf::rendezvous::StoreServer> server = [] {
    auto s = avf::rendezvous::StoreServer::Start({.host = "127.0.0.1",
                                                  .port = 0,
                                                  .world_size = avf::fuzz::kRendezvousWorld,
                                                  .token = avf::fuzz::kRendezvousToken,
                                                  .plan_sha256 = avf::fuzz::kRendezvousPlanSha256,
                                                  .log = [](std::string_view) {}});
    if (!s) {
      std::fprintf(stderr, "fuzz_rendezvous: cannot start the store: %s\n", llvm::toString(s.takeError()).c_str());
      std::abort();
    }
    return std::move(*s);
  }();
  return *server;
}

// libFuzzer's -timeout alarm interrupts system calls: each one below resumes
// after EINTR.
auto PollFor(int fd, short events, int timeout_ms) -> bool {
  pollfd p{.fd = fd, .events = events, .revents = 0};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (r == 1) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

auto Connect(uint16_t port) -> int {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (!ok && fd >= 0 && errno == EINTR && PollFor(fd, POLLOUT, kCloseWithinMs)) {
    int err = 0;
    socklen_t len = sizeof err;
    ok = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  if (!ok) {
    std::perror("fuzz_rendezvous: connect");
    std::abort();
  }
  return fd;
}

// Reads and drops replies until the store closes the connection.
auto DrainUntilClosed(int fd) -> bool {
  char buf[4096];
  while (PollFor(fd, POLLIN, kCloseWithinMs)) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EINTR)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = Connect(Server().port());
  // The store may close early (a bad hello); what it did not read is dropped.
  for (size_t sent = 0; sent < size;) {
    ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  bool closed = DrainUntilClosed(fd);
  ::close(fd);
  if (!closed) {
    std::fprintf(stderr, "fuzz_rendezvous: the store kept the connection open %d ms after the peer closed it\n",
                 kCloseWithinMs);
    __builtin_trap();
  }
  return 0;
}
