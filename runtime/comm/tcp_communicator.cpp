// The collectives of TcpCommunicator over its mesh (mesh.cpp), and the
// exchange engine under them: one poll() over every socket a collective uses.
#include "comm/tcp_communicator.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "comm/mesh.h"
#include "rendezvous/errors.h"

namespace avf::comm {

namespace net = rendezvous::net;
using net::Clock;

auto ReduceOpName(ReduceOp op) -> std::string_view { return op == ReduceOp::kSum ? "sum" : "avg"; }

auto DataTypeName(DataType type) -> std::string_view {
  switch (type) {
    case DataType::kF32: return "fp32";
    case DataType::kBF16: return "bf16";
  }
  return "?";
}

auto KindName(TcpCommunicator::Kind kind) -> std::string_view {
  using K = TcpCommunicator::Kind;
  switch (kind) {
    case K::kAllReduce: return "AllReduce";
    case K::kReduceScatter: return "ReduceScatter";
    case K::kAllGather: return "AllGather";
    case K::kBroadcast: return "Broadcast";
    case K::kSend: return "Send/Recv";
    case K::kBarrier: return "Barrier";
    case K::kSplit: return "Split";
  }
  return "?";
}

auto AddressKey(std::string_view id, int rank) -> std::string { return fmt::format("avf/comm/{}/addr/{}", id, rank); }
auto FailureKey(std::string_view id, int rank) -> std::string { return fmt::format("avf/comm/{}/failed/{}", id, rank); }

namespace {

constexpr size_t kHeaderBytes = 16;
using Header = std::array<char, kHeaderBytes>;

// u8 kind, u8 data type, 2 zero bytes, u32 sequence, u64 payload bytes,
// little-endian. fp32 is 0, so fp32 messages are those of before bf16 existed.
auto MakeHeader(TcpCommunicator::Kind kind, DataType type, uint32_t seq, uint64_t bytes) -> Header {
  Header h{};
  h[0] = static_cast<char>(kind);
  h[1] = static_cast<char>(type);
  for (int i = 0; i < 4; ++i) h[4 + i] = static_cast<char>((seq >> (8 * i)) & 0xff);
  for (int i = 0; i < 8; ++i) h[8 + i] = static_cast<char>((bytes >> (8 * i)) & 0xff);
  return h;
}

auto HeaderField(const Header& h, int at, int n) -> uint64_t {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(h[at + i]);
  return v;
}

// A DataType cast from an integer may be neither.
auto Known(DataType type) -> bool { return type == DataType::kF32 || type == DataType::kBF16; }

// "a 28-byte fp32 AllReduce message (#3)"; Barrier and Split carry no elements.
auto HeaderText(const Header& h) -> std::string {
  using K = TcpCommunicator::Kind;
  auto kind = static_cast<K>(h[0]);
  std::string type;
  if (kind != K::kBarrier && kind != K::kSplit) {
    auto t = static_cast<DataType>(h[1]);
    type = Known(t) ? std::string(DataTypeName(t)) : fmt::format("type-{}", static_cast<uint8_t>(h[1]));
    type += ' ';
  }
  return fmt::format("a {}-byte {}{} message (#{})", HeaderField(h, 8, 8), type, KindName(kind), HeaderField(h, 4, 4));
}

// Chunk c of `total` elements split over n ranks: the first total % n chunks
// get one element more. offsets has n + 1 entries.
auto EvenOffsets(size_t total, int n) -> std::vector<size_t> {
  std::vector<size_t> off(static_cast<size_t>(n) + 1);
  size_t base = total / n, extra = total % n;
  for (int c = 0; c < n; ++c) off[c + 1] = off[c] + base + (static_cast<size_t>(c) < extra ? 1 : 0);
  return off;
}

auto BlockOffsets(size_t per_rank, int n) -> std::vector<size_t> {
  std::vector<size_t> off(static_cast<size_t>(n) + 1);
  for (int c = 0; c <= n; ++c) off[c] = per_rank * c;
  return off;
}

auto Bytes(const void* p) -> const char* { return static_cast<const char*>(p); }
auto Bytes(void* p) -> char* { return static_cast<char*>(p); }

// The accumulator of every reduction is fp32; Narrow rounds it back once.
auto Widen(float x) -> float { return x; }
auto Widen(Bf16 x) -> float { return ToFloat(x); }
template <Element T>
auto Narrow(float x) -> T {
  if constexpr (std::same_as<T, float>) {
    return x;
  } else {
    return ToBf16(x);
  }
}

// out[i] = ((x_0[i] + x_1[i]) + ...) + x_{n-1}[i], / n for Avg, in fp32, where
// x_r = staging + r * count; rounded to T once. Blocks of fp32 accumulators keep
// the rank-by-rank passes in cache without changing any element's order.
template <Element T>
void SumInRankOrder(const T* staging, size_t count, int n, ReduceOp op, T* out) {
  constexpr size_t kBlock = 2048;
  float acc[kBlock];
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t m = std::min(kBlock, count - begin);
    for (size_t i = 0; i < m; ++i) acc[i] = Widen(staging[begin + i]);
    for (int r = 1; r < n; ++r) {
      const T* x = staging + count * r + begin;
      for (size_t i = 0; i < m; ++i) acc[i] += Widen(x[i]);
    }
    if (op == ReduceOp::kAvg) {
      const float ranks = static_cast<float>(n);
      for (size_t i = 0; i < m; ++i) acc[i] /= ranks;
    }
    for (size_t i = 0; i < m; ++i) out[begin + i] = Narrow<T>(acc[i]);
  }
}

// Calls body(T{}) with T the element type of `type`.
template <class Body>
auto WithElement(DataType type, Body&& body) -> llvm::Error {
  if (type == DataType::kBF16) return body(Bf16{});
  return body(float{});
}

}  // namespace

struct TcpCommunicator::Flow {
  Lane lane;
  Header out_header{}, in_header{}, want_header{};
  size_t out_done = 0, in_done = 0;
  Clock::time_point last_progress;

  auto sending() const -> bool { return lane.sends && out_done < kHeaderBytes + lane.out_bytes; }
  auto receiving() const -> bool { return lane.receives && in_done < kHeaderBytes + lane.in_bytes; }
};

auto TcpCommunicator::Create(TcpOptions options) -> llvm::Expected<std::unique_ptr<TcpCommunicator>> {
  if (!options.store || options.size < 1 || options.rank < 0 || options.rank >= options.size ||
      (!options.world_ranks.empty() && options.world_ranks.size() != static_cast<size_t>(options.size))) {
    return MakeError(CommErrc::kInvalidArgument,
                     fmt::format("a communicator needs a store and a rank from 0 to its size - 1 (rank {}, size {})",
                                 options.rank, options.size));
  }
  auto peers = detail::BuildMesh(options);
  if (!peers) return peers.takeError();
  return std::unique_ptr<TcpCommunicator>(new TcpCommunicator(std::move(options), std::move(*peers)));
}

TcpCommunicator::TcpCommunicator(TcpOptions options, std::vector<net::Fd> peers)
    : o_(std::move(options)), peers_(std::move(peers)), sent_(peers_.size()), received_(peers_.size()) {}

auto TcpCommunicator::Name(int rank) const -> std::string {
  if (o_.world_ranks.empty()) return fmt::format("rank {}", rank);
  return fmt::format("rank {} (rank {} of communicator '{}')", o_.world_ranks[rank], rank, o_.id);
}

auto TcpCommunicator::Fail(CommErrc code, std::string message) -> llvm::Error {
  broken_ = Failure{code, message};
  // Tell the store first: a peer that sees our connection close reads why.
  llvm::consumeError(o_.store->Set(FailureKey(o_.id, o_.rank), message));
  for (auto& fd : peers_) fd.Reset();
  return MakeError(code, std::move(message));
}

auto TcpCommunicator::Usable(Kind kind) -> llvm::Error {
  if (!broken_) return llvm::Error::success();
  return MakeError(broken_->code, fmt::format("{} on {} of communicator '{}': the communicator failed earlier: {}",
                                              KindName(kind), Name(o_.rank), o_.id, broken_->message));
}

auto TcpCommunicator::Ready(Kind kind, DataType type) -> llvm::Error {
  if (auto e = Usable(kind)) return e;
  if (Known(type)) return llvm::Error::success();
  return MakeError(
      CommErrc::kInvalidArgument,
      fmt::format("{}: data type {} is neither fp32 ({}) nor bf16 ({})", KindName(kind), static_cast<int>(type),
                  static_cast<int>(DataType::kF32), static_cast<int>(DataType::kBF16)));
}

auto TcpCommunicator::CheckPeer(int peer, std::string_view role, Kind kind) -> llvm::Error {
  if (peer >= 0 && peer < o_.size && peer != o_.rank) return llvm::Error::success();
  return MakeError(CommErrc::kInvalidArgument,
                   fmt::format("{}: the {} must be another rank of the {} in communicator '{}', not {}", KindName(kind),
                               role, o_.size, o_.id, peer));
}

auto TcpCommunicator::PeerClosed(int peer, Kind kind, int err) -> llvm::Error {
  std::string why = err == 0 || err == ECONNRESET || err == EPIPE
                        ? "closed its connection"
                        : fmt::format("lost its connection ({})", net::ErrnoText(err));
  std::string message = fmt::format("{} {} during {}", Name(peer), why, KindName(kind));
  std::string key = FailureKey(o_.id, peer);
  auto exists = o_.store->Check(std::span<const std::string>(&key, 1));
  if (exists && !exists->empty() && (*exists)[0]) {
    auto cause = o_.store->Get(key, milliseconds(0));
    if (cause) message += fmt::format(" after failing: {}", *cause);
    llvm::consumeError(cause.takeError());
  }
  llvm::consumeError(exists.takeError());
  return Fail(CommErrc::kConnectionLost, std::move(message));
}

auto TcpCommunicator::Stalled(const Flow& f, Kind kind) -> llvm::Error {
  return Fail(CommErrc::kTimeout,
              fmt::format("{} {} for {} during {}", Name(f.lane.peer), f.receiving() ? "sent nothing" : "took no data",
                          rendezvous::FormatSeconds(o_.timeout), KindName(kind)));
}

auto TcpCommunicator::HeaderMismatch(const Flow& f, Kind kind) -> llvm::Error {
  return Fail(CommErrc::kMalformed,
              fmt::format("{} sent {} during {}, where {} expected {}: the ranks called different collectives or "
                          "passed different sizes or data types",
                          Name(f.lane.peer), HeaderText(f.in_header), KindName(kind), Name(o_.rank),
                          HeaderText(f.want_header)));
}

auto TcpCommunicator::PumpSend(Flow& f, Kind kind) -> llvm::Error {
  while (f.sending()) {
    bool in_header = f.out_done < kHeaderBytes;
    const char* p = in_header ? f.out_header.data() + f.out_done : f.lane.out + (f.out_done - kHeaderBytes);
    size_t n = in_header ? kHeaderBytes - f.out_done : kHeaderBytes + f.lane.out_bytes - f.out_done;
    ssize_t r = net::SendNow(peers_[f.lane.peer].get(), p, n);
    if (r < 0) return PeerClosed(f.lane.peer, kind, errno);
    if (r == 0) break;
    f.out_done += static_cast<size_t>(r);
    f.last_progress = Clock::now();
  }
  return llvm::Error::success();
}

auto TcpCommunicator::PumpRecv(Flow& f, Kind kind) -> llvm::Error {
  while (f.receiving()) {
    bool in_header = f.in_done < kHeaderBytes;
    char* p = in_header ? f.in_header.data() + f.in_done : f.lane.in + (f.in_done - kHeaderBytes);
    size_t n = in_header ? kHeaderBytes - f.in_done : kHeaderBytes + f.lane.in_bytes - f.in_done;
    ssize_t r = net::RecvNow(peers_[f.lane.peer].get(), p, n);
    if (r < 0) return PeerClosed(f.lane.peer, kind, r == -2 ? 0 : errno);
    if (r == 0) break;
    f.in_done += static_cast<size_t>(r);
    f.last_progress = Clock::now();
    // Checked before any payload is read: a mismatch must not overrun `in`.
    if (in_header && f.in_done == kHeaderBytes && f.in_header != f.want_header) return HeaderMismatch(f, kind);
  }
  return llvm::Error::success();
}

auto TcpCommunicator::Pump(Flow& f, Kind kind) -> llvm::Error {
  if (auto e = PumpSend(f, kind)) return e;
  return PumpRecv(f, kind);
}

auto TcpCommunicator::Exchange(Kind kind, DataType type, std::span<Lane> lanes) -> llvm::Error {
  std::vector<Flow> flows;
  for (const Lane& l : lanes) {
    Flow& f = flows.emplace_back(Flow{.lane = l, .last_progress = Clock::now()});
    if (l.sends) f.out_header = MakeHeader(kind, type, sent_[l.peer]++, l.out_bytes);
    if (l.receives) f.want_header = MakeHeader(kind, type, received_[l.peer]++, l.in_bytes);
  }
  std::vector<pollfd> fds;
  std::vector<Flow*> active;
  for (;;) {
    fds.clear();
    active.clear();
    Flow* stalest = nullptr;
    for (Flow& f : flows) {
      short events = static_cast<short>((f.sending() ? POLLOUT : 0) | (f.receiving() ? POLLIN : 0));
      if (events == 0) continue;
      fds.push_back({peers_[f.lane.peer].get(), events, 0});
      active.push_back(&f);
      if (!stalest || f.last_progress < stalest->last_progress) stalest = &f;
    }
    if (active.empty()) return llvm::Error::success();
    auto deadline = stalest->last_progress + o_.timeout;
    int n = ::poll(fds.data(), fds.size(), net::PollTimeoutMs(deadline));
    if (n < 0 && errno != EINTR) return Fail(CommErrc::kIo, "poll failed: " + net::ErrnoText(errno));
    if (n == 0 && Clock::now() >= deadline) return Stalled(*stalest, kind);
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (auto e = Pump(*active[i], kind)) return e;
    }
  }
}

template <Element T>
auto TcpCommunicator::ReduceChunks(const T* in, T* out, std::span<const size_t> off, Kind kind, ReduceOp op)
    -> llvm::Error {
  const int n = o_.size, me = o_.rank;
  const size_t mine = off[me + 1] - off[me];
  // Rank r's contribution to this rank's chunk at staging[r * mine].
  std::vector<T> staging(mine * n);
  std::copy_n(in + off[me], mine, staging.data() + mine * me);
  std::vector<Lane> lanes;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    lanes.push_back({.peer = p,
                     .sends = true,
                     .out = Bytes(in + off[p]),
                     .out_bytes = (off[p + 1] - off[p]) * sizeof(T),
                     .receives = true,
                     .in = Bytes(staging.data() + mine * p),
                     .in_bytes = mine * sizeof(T)});
  }
  if (auto e = Exchange(kind, kDataTypeOf<T>, lanes)) return e;
  SumInRankOrder(staging.data(), mine, n, op, out);
  return llvm::Error::success();
}

auto TcpCommunicator::GatherChunks(void* data, std::span<const size_t> off, DataType type, Kind kind) -> llvm::Error {
  const int me = o_.rank;
  const size_t bytes = ElementBytes(type);
  char* base = Bytes(data);
  std::vector<Lane> lanes;
  for (int p = 0; p < o_.size; ++p) {
    if (p == me) continue;
    lanes.push_back({.peer = p,
                     .sends = true,
                     .out = base + off[me] * bytes,
                     .out_bytes = (off[me + 1] - off[me]) * bytes,
                     .receives = true,
                     .in = base + off[p] * bytes,
                     .in_bytes = (off[p + 1] - off[p]) * bytes});
  }
  return Exchange(kind, type, lanes);
}

auto TcpCommunicator::AllReduce(void* data, size_t count, DataType type, ReduceOp op) -> llvm::Error {
  if (auto e = Ready(Kind::kAllReduce, type)) return e;
  std::vector<size_t> off = EvenOffsets(count, o_.size);
  return WithElement(type, [&]<Element T>(T) -> llvm::Error {
    T* p = static_cast<T*>(data);
    if (auto e = ReduceChunks(p, p + off[o_.rank], off, Kind::kAllReduce, op)) return e;
    return GatherChunks(data, off, type, Kind::kAllReduce);
  });
}

auto TcpCommunicator::ReduceScatter(const void* in, void* out, size_t count_per_rank, DataType type, ReduceOp op)
    -> llvm::Error {
  if (auto e = Ready(Kind::kReduceScatter, type)) return e;
  return WithElement(type, [&]<Element T>(T) -> llvm::Error {
    return ReduceChunks(static_cast<const T*>(in), static_cast<T*>(out), BlockOffsets(count_per_rank, o_.size),
                        Kind::kReduceScatter, op);
  });
}

auto TcpCommunicator::AllGather(const void* in, void* out, size_t count_per_rank, DataType type) -> llvm::Error {
  if (auto e = Ready(Kind::kAllGather, type)) return e;
  const size_t block = count_per_rank * ElementBytes(type);
  char* mine = Bytes(out) + block * o_.rank;
  if (in != mine) std::memmove(mine, in, block);
  return GatherChunks(out, BlockOffsets(count_per_rank, o_.size), type, Kind::kAllGather);
}

auto TcpCommunicator::Broadcast(void* data, size_t count, DataType type, int root) -> llvm::Error {
  if (auto e = Ready(Kind::kBroadcast, type)) return e;
  if (root < 0 || root >= o_.size) return CheckPeer(root, "root", Kind::kBroadcast);
  const size_t bytes = count * ElementBytes(type);
  std::vector<Lane> lanes;
  for (int p = 0; p < o_.size; ++p) {
    if (p == o_.rank) continue;
    if (o_.rank == root) {
      lanes.push_back({.peer = p, .sends = true, .out = Bytes(data), .out_bytes = bytes});
    } else if (p == root) {
      lanes.push_back({.peer = p, .receives = true, .in = Bytes(data), .in_bytes = bytes});
    }
  }
  return Exchange(Kind::kBroadcast, type, lanes);
}

auto TcpCommunicator::Send(const void* data, size_t count, DataType type, int peer) -> llvm::Error {
  if (auto e = Ready(Kind::kSend, type)) return e;
  if (auto e = CheckPeer(peer, "destination", Kind::kSend)) return e;
  Lane lane{.peer = peer, .sends = true, .out = Bytes(data), .out_bytes = count * ElementBytes(type)};
  return Exchange(Kind::kSend, type, std::span<Lane>(&lane, 1));
}

auto TcpCommunicator::Recv(void* data, size_t count, DataType type, int peer) -> llvm::Error {
  if (auto e = Ready(Kind::kSend, type)) return e;
  if (auto e = CheckPeer(peer, "source", Kind::kSend)) return e;
  Lane lane{.peer = peer, .receives = true, .in = Bytes(data), .in_bytes = count * ElementBytes(type)};
  return Exchange(Kind::kSend, type, std::span<Lane>(&lane, 1));
}

auto TcpCommunicator::SendRecv(const void* send, size_t send_count, int to, void* recv, size_t recv_count, int from,
                               DataType type) -> llvm::Error {
  if (auto e = Ready(Kind::kSend, type)) return e;
  if (auto e = CheckPeer(to, "destination", Kind::kSend)) return e;
  if (auto e = CheckPeer(from, "source", Kind::kSend)) return e;
  const size_t bytes = ElementBytes(type);
  std::vector<Lane> lanes{{.peer = to, .sends = true, .out = Bytes(send), .out_bytes = send_count * bytes}};
  if (from == to) {
    lanes[0].receives = true;
    lanes[0].in = Bytes(recv);
    lanes[0].in_bytes = recv_count * bytes;
  } else {
    lanes.push_back({.peer = from, .receives = true, .in = Bytes(recv), .in_bytes = recv_count * bytes});
  }
  return Exchange(Kind::kSend, type, lanes);
}

auto TcpCommunicator::Barrier() -> llvm::Error {
  if (auto e = Usable(Kind::kBarrier)) return e;
  std::vector<Lane> lanes;
  for (int p = 0; p < o_.size; ++p) {
    if (p != o_.rank) lanes.push_back({.peer = p, .sends = true, .receives = true});
  }
  return Exchange(Kind::kBarrier, DataType::kF32, lanes);
}

auto TcpCommunicator::AllGatherBytes(const std::string& mine, Kind kind) -> llvm::Expected<std::vector<std::string>> {
  std::vector<std::string> all(static_cast<size_t>(o_.size), std::string(mine.size(), '\0'));
  all[o_.rank] = mine;
  std::vector<Lane> lanes;
  for (int p = 0; p < o_.size; ++p) {
    if (p == o_.rank) continue;
    lanes.push_back({.peer = p,
                     .sends = true,
                     .out = mine.data(),
                     .out_bytes = mine.size(),
                     .receives = true,
                     .in = all[p].data(),
                     .in_bytes = mine.size()});
  }
  if (auto e = Exchange(kind, DataType::kF32, lanes)) return e;
  return all;
}

auto TcpCommunicator::Split(int color, int key) -> llvm::Expected<std::unique_ptr<Communicator>> {
  if (auto e = Usable(Kind::kSplit)) return e;
  std::string mine(8, '\0');
  std::memcpy(mine.data(), &color, 4);
  std::memcpy(mine.data() + 4, &key, 4);
  auto all = AllGatherBytes(mine, Kind::kSplit);
  if (!all) return all.takeError();
  int split = splits_++;
  // (key, parent rank) of every rank with this colour, in child-rank order.
  std::vector<std::pair<int, int>> members;
  for (int r = 0; r < o_.size; ++r) {
    int c = 0, k = 0;
    std::memcpy(&c, (*all)[r].data(), 4);
    std::memcpy(&k, (*all)[r].data() + 4, 4);
    if (c < kNoColor) {
      return MakeError(CommErrc::kInvalidArgument,
                       fmt::format("{} passed colour {} to Split; a colour is >= 0, or -1 for none", Name(r), c));
    }
    if (c == color && color != kNoColor) members.push_back({k, r});
  }
  if (color == kNoColor) return nullptr;
  std::sort(members.begin(), members.end());
  TcpOptions child = o_;
  child.id = fmt::format("{}.s{}.c{}", o_.id, split, color);
  child.size = static_cast<int>(members.size());
  child.setup_timeout = o_.timeout;  // every member is running already
  child.world_ranks.clear();
  for (size_t i = 0; i < members.size(); ++i) {
    int parent_rank = members[i].second;
    if (parent_rank == o_.rank) child.rank = static_cast<int>(i);
    child.world_ranks.push_back(o_.world_ranks.empty() ? parent_rank : o_.world_ranks[parent_rank]);
  }
  auto made = Create(std::move(child));
  if (!made) return made.takeError();
  return std::unique_ptr<Communicator>(std::move(*made));
}

}  // namespace avf::comm
