#include "comm/mesh.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>

#include "comm/errors.h"
#include "rendezvous/errors.h"
#include "rendezvous/token.h"
#include "rendezvous/wire.h"

namespace avf::comm::detail {

namespace {

namespace net = rendezvous::net;
namespace wire = rendezvous::wire;
using net::Clock;
using net::Deadline;

// A hello holds a token and an id; anything longer is not one.
constexpr size_t kMaxHelloFrame = wire::kMaxHelloBytes + wire::kMaxKeyBytes;

auto Remaining(Deadline deadline) -> milliseconds {
  return std::chrono::duration_cast<milliseconds>(std::max(deadline - Clock::now(), Clock::duration::zero()));
}

// A refusal's status byte is its CommErrc (never 0, the status of success).
auto Reply(CommErrc code, std::string_view message) -> std::string {
  return std::move(wire::Writer().U8(static_cast<uint8_t>(code)).Str(message)).Finish();
}

auto RefusalCode(uint8_t status) -> CommErrc {
  return status >= 1 && status <= kLastErrc ? static_cast<CommErrc>(status) : CommErrc::kMalformed;
}

auto OkReply() -> std::string { return std::move(wire::Writer().U8(0).Str("")).Finish(); }

// "host:port" (IPv6 in brackets) as published by Create.
auto ParseAddress(std::string_view text, std::string* host, uint16_t* port) -> bool {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string_view h = text.substr(0, colon), p = text.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), *port);
  *host = std::string(h);
  return ec == std::errc() && end == p.data() + p.size() && !h.empty();
}

// One frame (header and payload) from a connecting peer's reply.
auto ReadFrame(int fd, Deadline deadline, std::string* payload) -> bool {
  char header[wire::kHeaderBytes];
  if (net::RecvExact(fd, header, sizeof header, deadline).kind != net::IoResult::kOk) return false;
  uint32_t n = wire::LoadU32(header);
  if (n > kMaxHelloFrame) return false;
  payload->resize(n);
  return net::RecvExact(fd, payload->data(), n, deadline).kind == net::IoResult::kOk;
}

// Connects to the lower rank `peer` and shows it the hello.
auto ConnectTo(const TcpOptions& o, int peer, Deadline deadline) -> llvm::Expected<net::Fd> {
  std::string who = fmt::format("rank {} of communicator '{}'", o.rank, o.id);
  auto addr = o.store->Get(AddressKey(o.id, peer), Remaining(deadline));
  if (!addr) return Wrap(addr.takeError(), fmt::format("{} has no address for rank {}", who, peer));
  std::string host;
  uint16_t port = 0;
  if (!ParseAddress(*addr, &host, &port)) {
    return MakeError(CommErrc::kMalformed, fmt::format("rank {} published '{}', not host:port", peer, *addr));
  }
  auto fd = net::ConnectWithRetry(host, port, deadline);
  if (!fd) return Wrap(fd.takeError(), fmt::format("{} cannot connect to rank {} at {}", who, peer, *addr));
  std::string hello = EncodeHello(o.token, o.id, o.rank, peer, o.size);
  std::string reply;
  if (net::SendAll(fd->get(), hello, deadline).kind != net::IoResult::kOk || !ReadFrame(fd->get(), deadline, &reply)) {
    return MakeError(CommErrc::kConnectionLost, fmt::format("rank {} did not answer the handshake of {} within {}",
                                                            peer, who, rendezvous::FormatSeconds(o.setup_timeout)));
  }
  wire::Reader r(reply);
  uint8_t status = r.U8();
  std::string why = r.Str();
  if (r.failed()) return MakeError(CommErrc::kMalformed, fmt::format("rank {} sent a malformed handshake reply", peer));
  if (status != 0) {
    return MakeError(RefusalCode(status), fmt::format("rank {} refused the connection of {}: {}", peer, who, why));
  }
  return std::move(*fd);
}

// A connection accepted but not yet admitted: its hello arrives in pieces.
struct Pending {
  net::Fd fd;
  std::string buf;
};

// Checks a complete hello; the peer's rank, or the refusal to send back.
auto Admit(const TcpOptions& o, std::string_view payload, const std::vector<net::Fd>& peers) -> llvm::Expected<int> {
  wire::Reader r(payload);
  uint8_t type = r.U8();
  uint32_t magic = r.U32();
  if (type != kHelloType || magic != kHelloMagic) return MakeError(CommErrc::kBadMagic, "not a communicator hello");
  if (r.U16() != kHelloVersion) return MakeError(CommErrc::kBadVersion, "unsupported handshake version");
  std::string token = r.Str(wire::kMaxTokenBytes);
  if (r.failed() || !rendezvous::TokensEqual(o.token, token)) {
    return MakeError(CommErrc::kBadToken, "the job token does not match");  // nothing else before the token
  }
  std::string id = r.Str(wire::kMaxKeyBytes);
  uint32_t from = r.U32(), to = r.U32(), size = r.U32();
  if (!r.ok_at_end()) return MakeError(CommErrc::kMalformed, "malformed hello");
  if (id != o.id || to != static_cast<uint32_t>(o.rank) || size != static_cast<uint32_t>(o.size)) {
    return MakeError(CommErrc::kInvalidArgument,
                     fmt::format("this is rank {} of communicator '{}' with {} ranks, not rank {} of '{}' with {}",
                                 o.rank, o.id, o.size, to, id, size));
  }
  if (from <= static_cast<uint32_t>(o.rank) || from >= size) {
    return MakeError(CommErrc::kRankOutOfRange, fmt::format("rank {} does not connect to rank {}", from, o.rank));
  }
  if (peers[from].valid())
    return MakeError(CommErrc::kDuplicateRank, fmt::format("rank {} is already connected", from));
  return static_cast<int>(from);
}

// Reads what `p` sent; true when it is done with (admitted or refused).
auto Step(const TcpOptions& o, Pending& p, std::vector<net::Fd>& peers, std::string* refusal) -> bool {
  char buf[1024];
  ssize_t n = net::RecvNow(p.fd.get(), buf, sizeof buf);
  if (n < 0) return true;  // closed or failed before its hello
  p.buf.append(buf, static_cast<size_t>(std::max<ssize_t>(n, 0)));
  if (p.buf.size() < wire::kHeaderBytes) return false;
  uint32_t len = wire::FrameLength(p.buf);
  if (len > kMaxHelloFrame) return true;
  if (p.buf.size() < wire::kHeaderBytes + len) return false;
  auto deadline = Clock::now() + std::chrono::seconds(1);
  auto from = Admit(o, std::string_view(p.buf).substr(wire::kHeaderBytes, len), peers);
  if (!from) {
    Failure f = TakeFailure(from.takeError());
    *refusal = fmt::format("refused a connection from {}: {}", net::PeerName(p.fd.get()), f.message);
    net::SendAll(p.fd.get(), Reply(f.code, f.message), deadline);
    return true;
  }
  if (net::SendAll(p.fd.get(), OkReply(), deadline).kind == net::IoResult::kOk) peers[*from] = std::move(p.fd);
  return true;
}

auto Missing(const TcpOptions& o, const std::vector<net::Fd>& peers) -> std::vector<int> {
  std::vector<int> missing;
  for (int r = o.rank + 1; r < o.size; ++r) {
    if (!peers[r].valid()) missing.push_back(r);
  }
  return missing;
}

void AcceptAll(int listen_fd, std::vector<Pending>& pending) {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or an aborted connection: nothing to keep
    net::TuneConnection(fd);
    pending.push_back({net::Fd(fd), {}});
  }
}

// Accepts the higher ranks (and refuses strangers) until all have come.
auto AcceptFrom(const TcpOptions& o, int listen_fd, std::vector<net::Fd>& peers, Deadline deadline) -> llvm::Error {
  std::vector<Pending> pending;
  std::string refusal;
  while (!Missing(o, peers).empty()) {
    std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
    for (auto& p : pending) fds.push_back({p.fd.get(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), net::PollTimeoutMs(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (size_t i = pending.size(); i-- > 0;) {
      if (fds[i + 1].revents != 0 && Step(o, pending[i], peers, &refusal)) pending.erase(pending.begin() + i);
    }
    if (fds[0].revents != 0) AcceptAll(listen_fd, pending);
  }
  std::vector<int> missing = Missing(o, peers);
  if (missing.empty()) return llvm::Error::success();
  return MakeError(CommErrc::kTimeout, fmt::format("{} did not connect to rank {} of communicator '{}' within {}{}",
                                                   rendezvous::FormatRanks(missing), o.rank, o.id,
                                                   rendezvous::FormatSeconds(o.setup_timeout),
                                                   refusal.empty() ? "" : " (" + refusal + ")"));
}

}  // namespace

auto EncodeHello(std::string_view token, std::string_view id, uint32_t from, uint32_t to, uint32_t size)
    -> std::string {
  return std::move(wire::Writer()
                       .U8(kHelloType)
                       .U32(kHelloMagic)
                       .U16(kHelloVersion)
                       .Str(token)
                       .Str(id)
                       .U32(from)
                       .U32(to)
                       .U32(size))
      .Finish();
}

auto BuildMesh(const TcpOptions& o) -> llvm::Expected<std::vector<net::Fd>> {
  Deadline deadline = Clock::now() + o.setup_timeout;
  auto listener = net::Listen(o.host, 0);
  if (!listener) return Wrap(listener.takeError(), fmt::format("rank {} of communicator '{}'", o.rank, o.id));
  if (auto e = o.store->Set(AddressKey(o.id, o.rank), net::JoinHostPort(o.host, listener->port))) {
    return AsCommError(std::move(e));
  }
  std::vector<net::Fd> peers(static_cast<size_t>(o.size));
  for (int r = 0; r < o.rank; ++r) {
    auto fd = ConnectTo(o, r, deadline);
    if (!fd) return fd.takeError();
    peers[r] = std::move(*fd);
  }
  if (auto e = AcceptFrom(o, listener->fd.get(), peers, deadline)) return e;
  return peers;
}

}  // namespace avf::comm::detail
