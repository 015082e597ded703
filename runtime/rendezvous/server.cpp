// StoreServer: one thread, one poll() loop over the listener, a wake-up pipe
// and every connection. Sockets are non-blocking; each connection has an input
// buffer (at most one frame of the size limit) and an output buffer. A client
// sends one request and waits for its reply; a GET/WAIT/WAIT_ALL that cannot be
// answered yet is parked on the connection with a deadline, indexed by the
// first key it still misses, and answered when a SET/ADD supplies the key or
// the deadline passes.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <map>
#include <queue>
#include <set>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "rendezvous/hello.h"
#include "rendezvous/store.h"
#include "rendezvous/token.h"

namespace avf::rendezvous {

namespace {

using net::Clock;
using net::Deadline;
using ConnId = uint64_t;

enum class Parked { kNone, kGet, kWait, kAll };

struct Conn {
  ConnId id = 0;
  net::Fd fd;
  std::string peer;  // "10.0.0.5:41234"
  std::string in;
  std::string out;
  size_t out_off = 0;
  int rank = -1;  // set by a valid hello
  bool dead = false;
  Parked parked = Parked::kNone;
  std::vector<std::string> wait_keys;
  milliseconds wait_timeout{0};
  std::string registered_key;  // the key under which waiting_on_ lists this connection
  uint64_t timer_seq = 0;      // the armed timer's sequence number (0: none)
};

// A deadline in the heap; stale when the connection's timer_seq moved on.
struct Timer {
  Deadline when;
  ConnId id;
  uint64_t seq;
  auto operator>(const Timer& o) const -> bool { return when > o.when; }
};

auto HexBytes(std::string_view s, size_t max) -> std::string {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    out += fmt::format("{}{:02x}", i ? " " : "", static_cast<unsigned char>(s[i]));
  }
  return out;
}

// Parses the decimal text of a counter.
auto ParseCounter(const std::string& text, int64_t* value) -> bool {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

}  // namespace

class StoreServer::Impl {
 public:
  Impl(ServerOptions options, net::Listener listener, net::Fd wake_read, net::Fd wake_write)
      : opts_(std::move(options)),
        listener_(std::move(listener)),
        wake_r_(std::move(wake_read)),
        wake_w_(std::move(wake_write)),
        joined_ever_(static_cast<size_t>(opts_.world_size), false),
        connected_(static_cast<size_t>(opts_.world_size), 0) {}

  // std::thread reports a failure to start by throwing; it becomes a kIo error here.
  auto StartThread() -> llvm::Error {
    try {
      thread_ = std::thread([this] { Run(); });
    } catch (const std::system_error& e) {
      return MakeError(StoreErrc::kIo, fmt::format("cannot start the rendezvous store's thread: {}", e.what()));
    }
    return llvm::Error::success();
  }
  void Stop();
  auto WaitForAll(milliseconds timeout) -> llvm::Error;
  auto Stats() const -> ServerStats;
  auto port() const -> uint16_t { return listener_.port; }

 private:
  void Run();
  // Returns the poll timeout: the nearest live deadline, -1 when there is none.
  auto BuildPollSet(std::vector<pollfd>& fds, std::vector<ConnId>& ids) -> int;
  void Dispatch(const std::vector<pollfd>& fds, const std::vector<ConnId>& ids);
  void AcceptAll();
  void OnReadable(Conn& c);
  void OnPeerClosed(Conn& c);
  // Handles the complete frames at the front of the input, one at a time,
  // pausing while a reply is unsent or a request is parked.
  void ProcessInput(Conn& c);
  auto CheckFrameHeader(Conn& c) -> bool;
  void HandleHello(Conn& c, std::string_view payload);
  void AdmitRank(Conn& c, int rank);
  void HandleRequest(Conn& c, std::string_view payload);
  void HandleSet(Conn& c, wire::Reader& r);
  void HandleGet(Conn& c, wire::Reader& r);
  void HandleAdd(Conn& c, wire::Reader& r);
  // WAIT parks until every key exists; CHECK (check_only) answers at once.
  void HandleWait(Conn& c, wire::Reader& r, bool check_only);
  void HandleWaitAll(Conn& c, wire::Reader& r);
  auto ReadKeys(wire::Reader& r, std::vector<std::string>* keys) -> bool;
  void Park(Conn& c, Parked kind, std::vector<std::string> keys, milliseconds timeout);
  auto RegisterUnderMissing(Conn& c) -> bool;
  // Forgets the parked request (index entries, timer) without answering it.
  void Unpark(Conn& c);
  // Re-examines the requests parked on `key`: answers those now complete.
  void OnKeySet(const std::string& key);
  void CompleteParked(Conn& c);
  void TimeOutParked(Conn& c);
  void FireTimers();
  auto NextTimeoutMs() -> int;
  // Timers are never removed from the heap: re-arming or clearing timer_seq makes old entries stale.
  void ArmTimer(Conn& c, Deadline when);
  // Queues a frame and sends what the socket takes now; POLLOUT sends the rest.
  void Reply(Conn& c, std::string frame);
  // An error reply that keeps the connection (timeout, bad key, not a counter).
  void ReplyError(Conn& c, StoreErrc code, std::string_view message);
  void Reject(Conn& c, StoreErrc code, std::string_view message);
  // Marks the connection dead and closes its socket; the loop erases it after
  // the pass, so pointers held during the pass stay valid.
  void Close(Conn& c, std::string_view why);
  void Flush(Conn& c);
  // On Stop(): parked requests get kShutdown, then every socket is closed.
  void CloseEverything();
  auto Find(ConnId id) -> Conn*;
  auto Who(const Conn& c) const -> std::string;
  auto MissingRanks() const -> std::vector<int>;
  void Log(std::string_view message) const {
    if (opts_.log) opts_.log(message);
  }
  static auto OutPending(const Conn& c) -> bool { return c.out_off < c.out.size(); }
  static auto HasCompleteFrame(const Conn& c) -> bool {
    return c.in.size() >= wire::kHeaderBytes && c.in.size() - wire::kHeaderBytes >= wire::FrameLength(c.in);
  }

  ServerOptions opts_;
  net::Listener listener_;
  net::Fd wake_r_, wake_w_;
  std::thread thread_;
  std::mutex stop_mu_;  // serializes Stop()

  mutable std::mutex mu_;  // everything below; held by the loop while it works
  std::condition_variable joined_cv_;
  bool stop_ = false;
  std::map<ConnId, std::unique_ptr<Conn>> conns_;
  std::vector<ConnId> dead_;
  ConnId next_id_ = 1;
  uint64_t next_seq_ = 1;
  std::unordered_map<std::string, std::string> kv_;
  std::unordered_map<std::string, std::set<ConnId>> waiting_on_;
  std::set<ConnId> waiting_all_;
  std::vector<bool> joined_ever_;
  int joined_count_ = 0;
  std::vector<ConnId> connected_;  // by rank; 0: not connected
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  Deadline accept_paused_until_{};
  int rejected_ = 0;
};

// ---- the loop ----

void StoreServer::Impl::Run() {
  std::vector<pollfd> fds;
  std::vector<ConnId> ids;
  for (;;) {
    int timeout = 0;
    {
      std::lock_guard lock(mu_);
      if (stop_) return CloseEverything();
      timeout = BuildPollSet(fds, ids);
    }
    int n = ::poll(fds.data(), fds.size(), timeout);
    int poll_errno = errno;
    std::lock_guard lock(mu_);
    if (n < 0 && poll_errno != EINTR) {
      Log(fmt::format("rendezvous store: poll failed: {}", net::ErrnoText(poll_errno)));
      std::this_thread::sleep_for(milliseconds(10));
    }
    if (n > 0) Dispatch(fds, ids);
    if (stop_) return CloseEverything();
    FireTimers();
    for (ConnId id : dead_) conns_.erase(id);
    dead_.clear();
  }
}

// fds[0] is the wake-up pipe, fds[1] the listener, then one per connection.
auto StoreServer::Impl::BuildPollSet(std::vector<pollfd>& fds, std::vector<ConnId>& ids) -> int {
  fds.clear();
  ids.clear();
  fds.push_back({wake_r_.get(), POLLIN, 0});
  bool paused = Clock::now() < accept_paused_until_;
  fds.push_back({paused ? -1 : listener_.fd.get(), POLLIN, 0});
  ids.assign(2, 0);
  for (auto& [id, c] : conns_) {
    short events = 0;
    // With a complete frame waiting behind an unsent reply, stop reading: the
    // input buffer never holds more than one frame ahead.
    if (!(OutPending(*c) && HasCompleteFrame(*c))) events |= POLLIN;
    if (OutPending(*c)) events |= POLLOUT;
    fds.push_back({c->fd.get(), events, 0});
    ids.push_back(id);
  }
  int timeout = NextTimeoutMs();
  if (paused) {
    int resume = net::PollTimeoutMs(accept_paused_until_);
    timeout = timeout < 0 ? resume : std::min(timeout, resume);
  }
  return timeout;
}

void StoreServer::Impl::Dispatch(const std::vector<pollfd>& fds, const std::vector<ConnId>& ids) {
  if (fds[0].revents != 0) {
    char buf[64];
    while (::read(wake_r_.get(), buf, sizeof buf) > 0) {}
  }
  if (stop_) return;
  if (fds[1].revents != 0) AcceptAll();
  for (size_t i = 2; i < fds.size(); ++i) {
    short ev = fds[i].revents;
    Conn* c = ev ? Find(ids[i]) : nullptr;
    if (!c) continue;
    if (ev & POLLOUT) {
      Flush(*c);
      if (!c->dead && !OutPending(*c)) ProcessInput(*c);
    }
    if (!c->dead && (ev & (POLLIN | POLLHUP | POLLERR))) OnReadable(*c);
  }
}

void StoreServer::Impl::AcceptAll() {
  for (;;) {
    int fd = ::accept4(listener_.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors: the listener stays readable, so back off instead of spinning.
      Log(fmt::format("rendezvous store: cannot accept a connection: {}; pausing accepts for 100 ms",
                      net::ErrnoText(errno)));
      accept_paused_until_ = Clock::now() + milliseconds(100);
      return;
    }
    net::TuneConnection(fd);
    auto c = std::make_unique<Conn>();
    c->id = next_id_++;
    c->fd = net::Fd(fd);
    c->peer = net::PeerName(fd);
    ArmTimer(*c, Clock::now() + opts_.handshake_timeout);
    conns_.emplace(c->id, std::move(c));
  }
}

void StoreServer::Impl::OnReadable(Conn& c) {
  char buf[64 * 1024];
  size_t budget = 1 << 20;  // per wake-up, so one busy peer cannot starve the others
  while (budget > 0 && !c.dead) {
    if (OutPending(c) && HasCompleteFrame(c)) return;
    ssize_t r = net::RecvNow(c.fd.get(), buf, std::min(sizeof buf, budget));
    if (r == 0) return;
    if (r == -2) return OnPeerClosed(c);
    if (r < 0) return Close(c, fmt::format("read error from {}: {}", Who(c), net::ErrnoText(errno)));
    if (c.parked != Parked::kNone) {
      return Reject(c, StoreErrc::kMalformed,
                    fmt::format("sent {} more bytes while its request was waiting; a client sends one request "
                                "and waits for the reply",
                                r));
    }
    c.in.append(buf, static_cast<size_t>(r));
    budget -= static_cast<size_t>(r);
    ProcessInput(c);
  }
}

void StoreServer::Impl::OnPeerClosed(Conn& c) {
  if (!c.in.empty()) {
    std::string expected = c.in.size() < wire::kHeaderBytes
                               ? "a 4-byte frame header"
                               : fmt::format("a frame of {} bytes", wire::kHeaderBytes + wire::FrameLength(c.in));
    ++rejected_;
    return Close(c, fmt::format("{} closed the connection in the middle of {} ({} bytes received)", Who(c), expected,
                                c.in.size()));
  }
  if (c.parked != Parked::kNone) {
    return Close(c, fmt::format("{} disconnected while its request was waiting", Who(c)));
  }
  Close(c, "");  // an orderly goodbye, or a TCP probe that never said hello
}

void StoreServer::Impl::ProcessInput(Conn& c) {
  while (!c.dead && CheckFrameHeader(c)) {
    if (!HasCompleteFrame(c) || c.parked != Parked::kNone || OutPending(c)) return;
    uint32_t len = wire::FrameLength(c.in);
    std::string_view payload(c.in.data() + wire::kHeaderBytes, len);
    if (c.rank < 0) {
      HandleHello(c, payload);
    } else {
      HandleRequest(c, payload);
    }
    if (c.dead) return;
    c.in.erase(0, wire::kHeaderBytes + len);
    if (c.parked != Parked::kNone && !c.in.empty()) {
      return Reject(c, StoreErrc::kMalformed,
                    "sent another request while one was waiting; a client sends one "
                    "request and waits for the reply");
    }
  }
}

// Checks the frame at the front of the buffer as soon as its header is there,
// before the body is read or anything is allocated for it.
auto StoreServer::Impl::CheckFrameHeader(Conn& c) -> bool {
  if (c.in.size() < wire::kHeaderBytes) return true;
  if (c.rank < 0 && c.in.size() >= 9 &&
      (static_cast<uint8_t>(c.in[4]) != static_cast<uint8_t>(wire::MsgType::kHello) ||
       wire::LoadU32(c.in.data() + 5) != wire::kMagic)) {
    Reject(c, StoreErrc::kBadMagic,
           fmt::format("the first message is not the hello of an avf rendezvous client (expected type 1 and "
                       "magic 0x{:08x} \"AVFR\" after the length, got the bytes {}): another program is talking to "
                       "MASTER_PORT",
                       wire::kMagic, HexBytes(c.in, 12)));
    return false;
  }
  uint32_t len = wire::FrameLength(c.in);
  uint32_t limit = c.rank < 0 ? wire::kMaxHelloBytes : opts_.max_frame_bytes;
  if (len <= limit) return true;
  Reject(c, StoreErrc::kFrameTooLarge,
         c.rank < 0 ? fmt::format("announced a hello of {} bytes; a hello has at most {}", len, limit)
                    : fmt::format("announced a frame of {} bytes; the store's limit is {} bytes", len, limit));
  return false;
}

// ---- requests ----

void StoreServer::Impl::HandleHello(Conn& c, std::string_view payload) {
  auto rank = CheckHello(payload, {opts_.token, opts_.plan_sha256, static_cast<uint32_t>(opts_.world_size)});
  if (!rank) {
    Failure f = TakeFailure(rank.takeError());
    return Reject(c, f.code, f.message);
  }
  if (Conn* other = Find(connected_[*rank]); other && !other->dead) {
    return Reject(c, StoreErrc::kDuplicateRank,
                  fmt::format("rank {} has already joined from {} and is still connected (do two ranks have the same "
                              "RANK?)",
                              *rank, other->peer));
  }
  AdmitRank(c, static_cast<int>(*rank));
}

void StoreServer::Impl::AdmitRank(Conn& c, int rank) {
  c.rank = rank;
  c.timer_seq = 0;  // the handshake deadline no longer applies
  connected_[static_cast<size_t>(rank)] = c.id;
  if (!joined_ever_[static_cast<size_t>(rank)]) {
    joined_ever_[static_cast<size_t>(rank)] = true;
    ++joined_count_;
    joined_cv_.notify_all();
  }
  Reply(c, std::move(wire::Writer().U8(0).U32(static_cast<uint32_t>(opts_.world_size)).U16(wire::kVersion)).Finish());
  if (joined_count_ == opts_.world_size) {
    auto ids = std::move(waiting_all_);
    waiting_all_.clear();
    for (ConnId id : ids) {
      if (Conn* w = Find(id); w && w->parked == Parked::kAll) CompleteParked(*w);
    }
  }
}

void StoreServer::Impl::HandleRequest(Conn& c, std::string_view payload) {
  wire::Reader r(payload);
  uint8_t type = r.U8();
  switch (static_cast<wire::MsgType>(type)) {
    case wire::MsgType::kSet: return HandleSet(c, r);
    case wire::MsgType::kGet: return HandleGet(c, r);
    case wire::MsgType::kAdd: return HandleAdd(c, r);
    case wire::MsgType::kWait: return HandleWait(c, r, false);
    case wire::MsgType::kCheck: return HandleWait(c, r, true);
    case wire::MsgType::kWaitAll: return HandleWaitAll(c, r);
    case wire::MsgType::kHello: break;
  }
  Reject(c, StoreErrc::kMalformed,
         fmt::format("sent a request of unknown type {} ({} bytes)", static_cast<unsigned>(type), payload.size()));
}

void StoreServer::Impl::HandleSet(Conn& c, wire::Reader& r) {
  std::string key = r.Str(wire::kMaxKeyBytes);
  std::string value = r.Str();
  if (!r.ok_at_end()) return Reject(c, StoreErrc::kMalformed, "sent a malformed SET request");
  if (key.empty()) return ReplyError(c, StoreErrc::kInvalidArgument, "the key is empty");
  kv_[key] = std::move(value);
  Reply(c, std::move(wire::Writer().U8(0)).Finish());
  OnKeySet(key);
}

void StoreServer::Impl::HandleGet(Conn& c, wire::Reader& r) {
  std::string key = r.Str(wire::kMaxKeyBytes);
  milliseconds timeout(r.U32());
  if (!r.ok_at_end()) return Reject(c, StoreErrc::kMalformed, "sent a malformed GET request");
  if (auto it = kv_.find(key); it != kv_.end())
    return Reply(c, std::move(wire::Writer().U8(0).Str(it->second)).Finish());
  Park(c, Parked::kGet, {std::move(key)}, timeout);
}

void StoreServer::Impl::HandleAdd(Conn& c, wire::Reader& r) {
  std::string key = r.Str(wire::kMaxKeyBytes);
  int64_t delta = r.I64();
  if (!r.ok_at_end()) return Reject(c, StoreErrc::kMalformed, "sent a malformed ADD request");
  if (key.empty()) return ReplyError(c, StoreErrc::kInvalidArgument, "the key is empty");
  int64_t value = 0;
  auto it = kv_.find(key);
  if (it != kv_.end() && !ParseCounter(it->second, &value)) {
    return ReplyError(c, StoreErrc::kNotCounter,
                      fmt::format("key {} holds a {}-byte value that is not a counter (it was written by SET)",
                                  QuoteKey(key), it->second.size()));
  }
  int64_t before = value;
  if (__builtin_add_overflow(before, delta, &value)) {
    return ReplyError(
        c, StoreErrc::kNotCounter,
        fmt::format("adding {} to key {} (now {}) overflows a 64-bit counter", delta, QuoteKey(key), before));
  }
  kv_[key] = std::to_string(value);
  Reply(c, std::move(wire::Writer().U8(0).I64(value)).Finish());
  OnKeySet(key);
}

auto StoreServer::Impl::ReadKeys(wire::Reader& r, std::vector<std::string>* keys) -> bool {
  uint32_t n = r.U32();
  if (n > r.remaining() / 4) return false;  // each key takes at least its 4-byte length
  keys->reserve(n);
  for (uint32_t i = 0; i < n && !r.failed(); ++i) keys->push_back(r.Str(wire::kMaxKeyBytes));
  return !r.failed();
}

void StoreServer::Impl::HandleWait(Conn& c, wire::Reader& r, bool check_only) {
  std::vector<std::string> keys;
  bool ok = ReadKeys(r, &keys);
  milliseconds timeout(check_only ? 0 : r.U32());
  if (!ok || !r.ok_at_end()) {
    return Reject(c, StoreErrc::kMalformed, fmt::format("sent a malformed {} request", check_only ? "CHECK" : "WAIT"));
  }
  if (check_only) {
    wire::Writer w;
    w.U8(0).U32(static_cast<uint32_t>(keys.size()));
    for (const auto& k : keys) w.U8(kv_.count(k) ? 1 : 0);
    return Reply(c, std::move(w).Finish());
  }
  Park(c, Parked::kWait, std::move(keys), timeout);
}

void StoreServer::Impl::HandleWaitAll(Conn& c, wire::Reader& r) {
  milliseconds timeout(r.U32());
  if (!r.ok_at_end()) return Reject(c, StoreErrc::kMalformed, "sent a malformed WAIT_ALL request");
  if (joined_count_ == opts_.world_size) return Reply(c, std::move(wire::Writer().U8(0)).Finish());
  Park(c, Parked::kAll, {}, timeout);
  waiting_all_.insert(c.id);
}

// ---- parked requests ----

void StoreServer::Impl::Park(Conn& c, Parked kind, std::vector<std::string> keys, milliseconds timeout) {
  c.parked = kind;
  c.wait_keys = std::move(keys);
  c.wait_timeout = timeout;
  if (kind != Parked::kAll && !RegisterUnderMissing(c)) return CompleteParked(c);
  ArmTimer(c, Clock::now() + timeout);
}

// Lists the connection under the first key it still misses; false when none is missing.
auto StoreServer::Impl::RegisterUnderMissing(Conn& c) -> bool {
  for (const auto& k : c.wait_keys) {
    if (!kv_.count(k)) {
      waiting_on_[k].insert(c.id);
      c.registered_key = k;
      return true;
    }
  }
  return false;
}

void StoreServer::Impl::Unpark(Conn& c) {
  if (!c.registered_key.empty()) {
    if (auto it = waiting_on_.find(c.registered_key); it != waiting_on_.end()) {
      it->second.erase(c.id);
      if (it->second.empty()) waiting_on_.erase(it);
    }
    c.registered_key.clear();
  }
  if (c.parked == Parked::kAll) waiting_all_.erase(c.id);
  c.parked = Parked::kNone;
  c.wait_keys.clear();
  c.timer_seq = 0;
}

void StoreServer::Impl::OnKeySet(const std::string& key) {
  auto it = waiting_on_.find(key);
  if (it == waiting_on_.end()) return;
  std::set<ConnId> ids = std::move(it->second);
  waiting_on_.erase(it);
  for (ConnId id : ids) {
    Conn* c = Find(id);
    if (!c || c->parked == Parked::kNone || c->registered_key != key) continue;
    c->registered_key.clear();
    if (!RegisterUnderMissing(*c)) CompleteParked(*c);
  }
}

void StoreServer::Impl::CompleteParked(Conn& c) {
  Parked kind = c.parked;
  std::string key = kind == Parked::kGet ? c.wait_keys.front() : std::string();
  Unpark(c);
  if (kind == Parked::kGet) return Reply(c, std::move(wire::Writer().U8(0).Str(kv_[key])).Finish());
  Reply(c, std::move(wire::Writer().U8(0)).Finish());
}

void StoreServer::Impl::TimeOutParked(Conn& c) {
  std::string message;
  if (c.parked == Parked::kAll) {
    auto missing = MissingRanks();
    message = fmt::format("{} did not join within {} ({} of {} joined)", FormatRanks(missing),
                          FormatSeconds(c.wait_timeout), joined_count_, opts_.world_size);
  } else {
    std::vector<std::string> missing;
    for (const auto& k : c.wait_keys) {
      if (!kv_.count(k)) missing.push_back(k);
    }
    std::string of = c.wait_keys.size() > 1 ? fmt::format(" ({} of {})", missing.size(), c.wait_keys.size()) : "";
    message = fmt::format("{} {}{} {} not set within {}", missing.size() == 1 ? "key" : "keys", FormatKeys(missing), of,
                          missing.size() == 1 ? "was" : "were", FormatSeconds(c.wait_timeout));
  }
  Unpark(c);
  ReplyError(c, StoreErrc::kTimeout, message);
}

auto StoreServer::Impl::MissingRanks() const -> std::vector<int> {
  std::vector<int> missing;
  for (size_t r = 0; r < joined_ever_.size(); ++r) {
    if (!joined_ever_[r]) missing.push_back(static_cast<int>(r));
  }
  return missing;
}

void StoreServer::Impl::ArmTimer(Conn& c, Deadline when) {
  c.timer_seq = next_seq_++;
  timers_.push({when, c.id, c.timer_seq});
}

// Drops stale timers from the top; the time to the first live one (-1: none).
auto StoreServer::Impl::NextTimeoutMs() -> int {
  while (!timers_.empty()) {
    const Timer& t = timers_.top();
    Conn* c = Find(t.id);
    if (c && c->timer_seq == t.seq) return net::PollTimeoutMs(t.when);
    timers_.pop();
  }
  return -1;
}

void StoreServer::Impl::FireTimers() {
  auto now = Clock::now();
  while (!timers_.empty() && timers_.top().when <= now) {
    Timer t = timers_.top();
    timers_.pop();
    Conn* c = Find(t.id);
    if (!c || c->timer_seq != t.seq) continue;
    c->timer_seq = 0;
    if (c->rank < 0) {
      Reject(*c, StoreErrc::kTimeout,
             fmt::format("sent no valid hello within {} of connecting", FormatSeconds(opts_.handshake_timeout)));
    } else if (c->parked != Parked::kNone) {
      TimeOutParked(*c);
    }
  }
}

// ---- output and closing ----

void StoreServer::Impl::Reply(Conn& c, std::string frame) {
  if (c.out_off == c.out.size()) {
    c.out = std::move(frame);  // the common case: no copy of a large value
    c.out_off = 0;
  } else {
    c.out += frame;
  }
  Flush(c);
}

void StoreServer::Impl::ReplyError(Conn& c, StoreErrc code, std::string_view message) {
  Reply(c, std::move(wire::Writer().U8(static_cast<uint8_t>(wire::ToWireStatus(code))).Str(message)).Finish());
}

// Answers with the error, logs it, and closes: the peer is not (or no longer)
// a client this store can talk to.
void StoreServer::Impl::Reject(Conn& c, StoreErrc code, std::string_view message) {
  ++rejected_;
  Log(fmt::format("rendezvous store: closed the connection from {}: {}", Who(c), message));
  ReplyError(c, code, message);
  Close(c, "");
}

void StoreServer::Impl::Flush(Conn& c) {
  while (!c.dead && OutPending(c)) {
    ssize_t n = net::SendNow(c.fd.get(), c.out.data() + c.out_off, c.out.size() - c.out_off);
    if (n < 0) return Close(c, fmt::format("write error to {}: {}", Who(c), net::ErrnoText(errno)));
    if (n == 0) return;
    c.out_off += static_cast<size_t>(n);
  }
  if (!OutPending(c)) {
    c.out.clear();
    c.out_off = 0;
  }
}

void StoreServer::Impl::Close(Conn& c, std::string_view why) {
  if (c.dead) return;
  if (!why.empty()) Log(fmt::format("rendezvous store: {}", why));
  Unpark(c);
  if (c.rank >= 0 && connected_[static_cast<size_t>(c.rank)] == c.id) connected_[static_cast<size_t>(c.rank)] = 0;
  c.dead = true;
  c.fd.Reset();
  dead_.push_back(c.id);
}

void StoreServer::Impl::CloseEverything() {
  for (auto& [id, c] : conns_) {
    if (c->parked != Parked::kNone) {
      Unpark(*c);
      ReplyError(*c, StoreErrc::kShutdown, "the store shut down (rank 0 is exiting) while the request was waiting");
    }
    Close(*c, "");
  }
  conns_.clear();
  dead_.clear();
  listener_.fd.Reset();
  joined_cv_.notify_all();
}

auto StoreServer::Impl::Find(ConnId id) -> Conn* {
  auto it = conns_.find(id);
  return it == conns_.end() || it->second->dead ? nullptr : it->second.get();
}

auto StoreServer::Impl::Who(const Conn& c) const -> std::string {
  return c.rank >= 0 ? fmt::format("rank {} ({})", c.rank, c.peer) : c.peer;
}

// ---- the public side ----

void StoreServer::Impl::Stop() {
  std::lock_guard stop_lock(stop_mu_);
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    joined_cv_.notify_all();
  }
  char b = 1;
  while (::write(wake_w_.get(), &b, 1) < 0 && errno == EINTR) {}
  if (thread_.joinable()) thread_.join();
}

auto StoreServer::Impl::WaitForAll(milliseconds timeout) -> llvm::Error {
  std::unique_lock lock(mu_);
  joined_cv_.wait_for(lock, timeout, [&] { return stop_ || joined_count_ == opts_.world_size; });
  if (joined_count_ == opts_.world_size) return llvm::Error::success();
  if (stop_) return MakeError(StoreErrc::kShutdown, "the rendezvous store shut down before every rank joined");
  auto missing = MissingRanks();
  return MakeError(
      StoreErrc::kTimeout,
      fmt::format("{} did not join the rendezvous store on port {} within {} ({} of {} joined)", FormatRanks(missing),
                  listener_.port, FormatSeconds(timeout), joined_count_, opts_.world_size));
}

auto StoreServer::Impl::Stats() const -> ServerStats {
  std::lock_guard lock(mu_);
  ServerStats s;
  for (const auto& [id, c] : conns_) {
    if (c->dead) continue;
    ++s.connections;
    if (c->parked != Parked::kNone) ++s.parked;
  }
  for (ConnId id : connected_) s.connected_ranks += id != 0;
  s.joined_ranks = joined_count_;
  s.rejected = rejected_;
  s.keys = kv_.size();
  return s;
}

StoreServer::StoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StoreServer::~StoreServer() { Shutdown(); }
void StoreServer::Shutdown() { impl_->Stop(); }
auto StoreServer::port() const -> uint16_t { return impl_->port(); }
auto StoreServer::WaitForAll(milliseconds timeout) -> llvm::Error { return impl_->WaitForAll(timeout); }
auto StoreServer::Stats() const -> ServerStats { return impl_->Stats(); }

auto StoreServer::Start(ServerOptions options) -> llvm::Expected<std::unique_ptr<StoreServer>> {
  if (options.world_size < 1 || options.world_size > (1 << 24)) {
    return MakeError(
        StoreErrc::kInvalidArgument,
        fmt::format("the rendezvous store needs a world size from 1 to {}, not {}", 1 << 24, options.world_size));
  }
  if (auto err = ValidateToken(options.token, "the store's options")) return err;
  if (!wire::IsPlanSha256(options.plan_sha256)) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("the store's plan_sha256 has {} bytes; it must be the plan.json's SHA-256 ({} "
                                 "lowercase hexadecimal digits)",
                                 options.plan_sha256.size(), wire::kPlanSha256Bytes));
  }
  if (options.max_frame_bytes < wire::kMaxHelloBytes || options.max_frame_bytes > wire::kMaxFrameBytes) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("max_frame_bytes must be from {} to {}, not {}", wire::kMaxHelloBytes,
                                 wire::kMaxFrameBytes, options.max_frame_bytes));
  }
  auto listener = net::Listen(options.host, options.port);
  if (!listener) return listener.takeError();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return MakeError(StoreErrc::kIo, fmt::format("cannot create the store's wake-up pipe: {}", net::ErrnoText(errno)));
  }
  auto impl =
      std::make_unique<Impl>(std::move(options), std::move(*listener), net::Fd(pipe_fds[0]), net::Fd(pipe_fds[1]));
  if (auto err = impl->StartThread()) return err;
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(impl)));
}

}  // namespace avf::rendezvous
