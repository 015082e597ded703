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
    auto s = avf::rendezvous::StoreServer::Start(
        {.host = "127.0.0.1", .port = 0, .world_size = avf::fuzz::kRendezvousWorld,
         .token = avf::fuzz::kRendezvousToken, .log = [](std::string_view) {}});
    if (!s) {
      std::fprintf(stderr, "fuzz_rendezvous: cannot start the store: %s\n", llvm::toString(s.takeError()).c_str());
      std::abort();
    }
    return std::move(*s);
  }();
  return *server;
}

auto Connect(uint16_t port) -> int {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("fuzz_rendezvous: connect");
    std::abort();
  }
  return fd;
}

// Reads and drops replies until the store closes the connection.
auto DrainUntilClosed(int fd) -> bool {
  char buf[4096];
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  while (::poll(&p, 1, kCloseWithinMs) == 1) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = Connect(Server().port());
  // The store may close early (a bad hello); what it did not read is dropped.
  for (size_t sent = 0; sent < size;) {
    ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
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
