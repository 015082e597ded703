// StoreClient: one connection to the store, one request at a time, every wait
// bounded by a deadline. Replies are length-checked before any allocation,
// and read in pieces as they arrive.
#include "rendezvous/store.h"

#include <climits>

#include <fmt/format.h>

#include "rendezvous/token.h"

namespace avf::rendezvous {

namespace {

using net::Clock;

// The request's timeout as the wire's u32 milliseconds.
auto WireTimeout(milliseconds t) -> uint32_t {
  if (t.count() <= 0) return 0;
  return t.count() >= static_cast<int64_t>(UINT32_MAX) ? UINT32_MAX - 1 : static_cast<uint32_t>(t.count());
}

// After these error replies the store keeps the connection open; after any
// other it has closed it.
auto KeepsConnection(StoreErrc code) -> bool {
  return code == StoreErrc::kTimeout || code == StoreErrc::kInvalidArgument || code == StoreErrc::kNotCounter;
}

auto Plural(size_t n, std::string_view one, std::string_view many) -> std::string {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

StoreClient::StoreClient(net::Fd fd, const ClientOptions& options)
    : fd_(std::move(fd)),
      where_(net::JoinHostPort(options.host, options.port)),
      rank_(options.rank),
      world_size_(options.world_size),
      io_timeout_(options.io_timeout) {}

namespace {

auto ValidateClientOptions(const ClientOptions& o) -> llvm::Error {
  if (o.world_size < 1 || o.world_size > (1 << 24)) {
    return MakeError(
        StoreErrc::kInvalidArgument,
        fmt::format("the world size must be from 1 to {}, not {} (check WORLD_SIZE)", 1 << 24, o.world_size));
  }
  if (o.rank < 0 || o.rank >= o.world_size) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("rank {} is out of range for a job of {} ranks (0-{}; check RANK and WORLD_SIZE)",
                                 o.rank, o.world_size, o.world_size - 1));
  }
  if (o.host.empty() || o.port == 0) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("the rendezvous store's address '{}' has no {} (check MASTER_ADDR and MASTER_PORT)",
                                 net::JoinHostPort(o.host, o.port), o.host.empty() ? "host" : "port"));
  }
  if (!wire::IsPlanSha256(o.plan_sha256)) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("rank {}: the plan's SHA-256 has {} bytes; it must be {} lowercase hexadecimal digits",
                                 o.rank, o.plan_sha256.size(), wire::kPlanSha256Bytes));
  }
  return ValidateToken(o.token, "the rank's options");
}

}  // namespace

auto StoreClient::Join(const ClientOptions& options) -> llvm::Expected<std::unique_ptr<StoreClient>> {
  if (auto err = ValidateClientOptions(options)) return err;
  auto fd = net::ConnectWithRetry(options.host, options.port, Clock::now() + options.connect_timeout);
  if (!fd) return fd.takeError();
  std::unique_ptr<StoreClient> client(new StoreClient(std::move(*fd), options));
  auto hello = EncodeHello(options.token, static_cast<uint32_t>(options.rank),
                           static_cast<uint32_t>(options.world_size), options.plan_sha256);
  auto body = client->Call(std::move(hello), milliseconds(0), "JOIN");
  if (!body) return body.takeError();
  wire::Reader r(*body);
  uint32_t world = r.U32();
  r.U16();
  if (!r.ok_at_end() || world != static_cast<uint32_t>(options.world_size)) {
    return MakeError(StoreErrc::kMalformed, fmt::format("rank {}: the rendezvous store at {} accepted the join with a "
                                                        "malformed reply",
                                                        options.rank, client->where_));
  }
  return client;
}

auto StoreClient::Broken(StoreErrc code, std::string message) -> llvm::Error {
  broken_ = Failure{code, message};
  return MakeError(code, std::move(message));
}

auto StoreClient::Call(std::string frame, milliseconds reply_within, std::string_view what)
    -> llvm::Expected<std::string> {
  std::lock_guard lock(mu_);
  if (broken_) {
    return MakeError(broken_->code, fmt::format("rank {}: {} on the rendezvous store at {}: the connection failed "
                                                "earlier ({})",
                                                rank_, what, where_, broken_->message));
  }
  return CallLocked(frame, reply_within, what);
}

auto StoreClient::CallLocked(const std::string& frame, milliseconds reply_within, std::string_view what)
    -> llvm::Expected<std::string> {
  std::string subject = fmt::format("rank {}: {} on the rendezvous store at {}", rank_, what, where_);
  auto sent = net::SendAll(fd_.get(), frame, Clock::now() + io_timeout_);
  if (sent.kind == net::IoResult::kTimeout) {
    return Broken(StoreErrc::kTimeout,
                  fmt::format("{}: the store took no data for {}", subject, FormatSeconds(io_timeout_)));
  }
  if (sent.kind != net::IoResult::kOk) {
    return Broken(StoreErrc::kConnectionLost,
                  fmt::format("{}: cannot send the request: {}", subject, net::ErrnoText(sent.err)));
  }
  auto payload = ReadReply(Clock::now() + reply_within + io_timeout_, subject);
  if (!payload) return payload.takeError();
  auto status = static_cast<uint8_t>((*payload)[0]);
  if (status == 0) {
    payload->erase(0, 1);  // in place: a large value is not copied to new memory
    return payload;
  }
  wire::Reader r(std::string_view(*payload).substr(1));
  std::string detail = r.Str();
  if (!r.ok_at_end())
    return Broken(StoreErrc::kMalformed, fmt::format("{}: the store's error reply is malformed", subject));
  StoreErrc code = wire::ToErrc(status);
  if (what == "JOIN") subject = fmt::format("the rendezvous store at {} rejected rank {}", where_, rank_);
  std::string message = fmt::format("{}: {}", subject, detail);
  if (KeepsConnection(code)) return MakeError(code, std::move(message));
  return Broken(code, std::move(message));
}

// One reply frame; at least one byte (the status). Every failure here leaves
// the connection unusable.
auto StoreClient::ReadReply(net::Deadline deadline, std::string_view subject) -> llvm::Expected<std::string> {
  auto failed = [&](const net::IoResult& io, std::string_view part, size_t want) -> llvm::Error {
    if (io.kind == net::IoResult::kTimeout) {
      return Broken(StoreErrc::kTimeout, fmt::format("{}: no reply from the store in time ({} of {} bytes of the {} "
                                                     "received)",
                                                     subject, io.done, want, part));
    }
    if (io.kind == net::IoResult::kClosed && io.done == 0 && part == "reply header") {
      return Broken(StoreErrc::kConnectionLost, fmt::format("{}: the store closed the connection before replying "
                                                            "(rank 0 exited or restarted?)",
                                                            subject));
    }
    std::string why = io.kind == net::IoResult::kClosed ? "the store closed the connection" : net::ErrnoText(io.err);
    return Broken(StoreErrc::kConnectionLost, fmt::format("{}: {} in the middle of the {} ({} of {} bytes received)",
                                                          subject, why, part, io.done, want));
  };
  char header[wire::kHeaderBytes];
  auto io = net::RecvExact(fd_.get(), header, sizeof header, deadline);
  if (io.kind != net::IoResult::kOk) return failed(io, "reply header", sizeof header);
  uint32_t len = wire::LoadU32(header);
  if (len > wire::kMaxFrameBytes || len == 0) {
    return Broken(len == 0 ? StoreErrc::kMalformed : StoreErrc::kFrameTooLarge,
                  fmt::format("{}: the store announced a reply of {} bytes (expected 1 to {})", subject, len,
                              wire::kMaxFrameBytes));
  }
  std::string payload;
  while (payload.size() < len) {
    // Grow with what arrives, not with what the header promises.
    size_t old = payload.size(), chunk = std::min<size_t>(len - old, 1 << 20);
    payload.resize(old + chunk);
    io = net::RecvExact(fd_.get(), payload.data() + old, chunk, deadline);
    if (io.kind != net::IoResult::kOk) {
      io.done += old;
      return failed(io, "reply", len);
    }
  }
  return payload;
}

auto StoreClient::CheckKey(std::string_view key) const -> llvm::Error {
  if (key.empty())
    return MakeError(StoreErrc::kInvalidArgument, fmt::format("rank {}: a store key cannot be empty", rank_));
  if (key.size() > wire::kMaxKeyBytes) {
    return MakeError(StoreErrc::kInvalidArgument, fmt::format("rank {}: the key {} has {} bytes; a key has at most {}",
                                                              rank_, QuoteKey(key), key.size(), wire::kMaxKeyBytes));
  }
  return llvm::Error::success();
}

auto StoreClient::Set(std::string_view key, std::string_view value) -> llvm::Error {
  if (auto err = CheckKey(key)) return err;
  if (value.size() > wire::kMaxFrameBytes - key.size() - 16) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("rank {}: the value for key {} has {} bytes; a store message holds at most {}", rank_,
                                 QuoteKey(key), value.size(), wire::kMaxFrameBytes));
  }
  auto frame = std::move(wire::Writer().U8(static_cast<uint8_t>(wire::MsgType::kSet)).Str(key).Str(value)).Finish();
  auto body = Call(std::move(frame), milliseconds(0), fmt::format("SET {}", QuoteKey(key)));
  if (!body) return body.takeError();
  return llvm::Error::success();
}

auto StoreClient::Get(std::string_view key, milliseconds timeout) -> llvm::Expected<std::string> {
  if (auto err = CheckKey(key)) return err;
  auto frame =
      std::move(wire::Writer().U8(static_cast<uint8_t>(wire::MsgType::kGet)).Str(key).U32(WireTimeout(timeout)))
          .Finish();
  std::string what = fmt::format("GET {}", QuoteKey(key));
  auto body = Call(std::move(frame), timeout, what);
  if (!body) return body.takeError();
  // The body is one string: its u32 length, then exactly that many bytes.
  if (body->size() < 4 || wire::LoadU32(body->data()) != body->size() - 4) {
    std::lock_guard lock(mu_);
    return Broken(StoreErrc::kMalformed,
                  fmt::format("rank {}: {} on the rendezvous store at {}: malformed reply", rank_, what, where_));
  }
  body->erase(0, 4);
  return body;
}

auto StoreClient::Add(std::string_view key, int64_t delta) -> llvm::Expected<int64_t> {
  if (auto err = CheckKey(key)) return err;
  auto frame = std::move(wire::Writer().U8(static_cast<uint8_t>(wire::MsgType::kAdd)).Str(key).I64(delta)).Finish();
  std::string what = fmt::format("ADD {}", QuoteKey(key));
  auto body = Call(std::move(frame), milliseconds(0), what);
  if (!body) return body.takeError();
  wire::Reader r(*body);
  int64_t value = r.I64();
  if (!r.ok_at_end()) {
    std::lock_guard lock(mu_);
    return Broken(StoreErrc::kMalformed,
                  fmt::format("rank {}: {} on the rendezvous store at {}: malformed reply", rank_, what, where_));
  }
  return value;
}

namespace {

// The WAIT/CHECK frame; false when the keys do not fit one message.
auto KeysFrame(wire::MsgType type, std::span<const std::string> keys, std::optional<uint32_t> timeout,
               std::string* frame) -> bool {
  wire::Writer w;
  w.U8(static_cast<uint8_t>(type)).U32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) {
    w.Str(k);
    if (w.payload_bytes() > wire::kMaxFrameBytes - 8) return false;
  }
  if (timeout) w.U32(*timeout);
  *frame = std::move(w).Finish();
  return true;
}

}  // namespace

auto StoreClient::Wait(std::span<const std::string> keys, milliseconds timeout) -> llvm::Error {
  for (const auto& k : keys) {
    if (auto err = CheckKey(k)) return err;
  }
  std::string frame;
  if (!KeysFrame(wire::MsgType::kWait, keys, WireTimeout(timeout), &frame)) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("rank {}: {} keys do not fit one store message", rank_, keys.size()));
  }
  auto body = Call(std::move(frame), timeout, fmt::format("WAIT {}", FormatKeys(keys, 3)));
  if (!body) return body.takeError();
  return llvm::Error::success();
}

auto StoreClient::Check(std::span<const std::string> keys) -> llvm::Expected<std::vector<bool>> {
  for (const auto& k : keys) {
    if (auto err = CheckKey(k)) return err;
  }
  std::string frame;
  if (!KeysFrame(wire::MsgType::kCheck, keys, std::nullopt, &frame)) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("rank {}: {} keys do not fit one store message", rank_, keys.size()));
  }
  std::string what = fmt::format("CHECK {}", FormatKeys(keys, 3));
  auto body = Call(std::move(frame), milliseconds(0), what);
  if (!body) return body.takeError();
  wire::Reader r(*body);
  std::vector<bool> present(r.U32() == keys.size() ? keys.size() : 0);
  for (size_t i = 0; i < present.size(); ++i) present[i] = r.U8() != 0;
  if (!r.ok_at_end() || present.size() != keys.size()) {
    std::lock_guard lock(mu_);
    return Broken(StoreErrc::kMalformed,
                  fmt::format("rank {}: {} on the rendezvous store at {}: malformed reply", rank_, what, where_));
  }
  return present;
}

auto StoreClient::WaitForAll(milliseconds timeout) -> llvm::Error {
  auto frame =
      std::move(wire::Writer().U8(static_cast<uint8_t>(wire::MsgType::kWaitAll)).U32(WireTimeout(timeout))).Finish();
  auto body = Call(std::move(frame), timeout, "WAIT_ALL");
  if (!body) return body.takeError();
  return llvm::Error::success();
}

auto StoreClient::Barrier(std::string_view name, int participants, milliseconds timeout) -> llvm::Error {
  if (participants < 1 || participants > world_size_) {
    return MakeError(StoreErrc::kInvalidArgument, fmt::format("rank {}: barrier {} needs 1 to {} participants, not {}",
                                                              rank_, QuoteKey(name), world_size_, participants));
  }
  auto deadline = Clock::now() + timeout;
  int64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    generation = barrier_calls_[std::string(name)]++;
  }
  std::string prefix = fmt::format("avf/barrier/{}/{}/", name, generation);
  if (auto err = Set(prefix + fmt::format("arrived/{}", rank_), "")) return err;
  auto count = Add(prefix + "count", 1);
  if (!count) return count.takeError();
  if (*count == participants) {
    if (auto err = Set(prefix + "done", "")) return err;
  } else if (*count > participants) {
    return MakeError(StoreErrc::kInvalidArgument,
                     fmt::format("rank {}: barrier {} (call {}) has {} arrivals but is for {} participants: the ranks "
                                 "disagree on its size, or call it a different number of times",
                                 rank_, QuoteKey(name), generation + 1, *count, participants));
  }
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  std::string done = prefix + "done";
  auto err = Wait(std::span<const std::string>(&done, 1), std::max(left, milliseconds(0)));
  if (!err) return err;
  auto failure = TakeFailure(std::move(err));
  if (failure.code != StoreErrc::kTimeout) return MakeError(failure.code, std::move(failure.message));
  return BarrierTimeout(name, generation, participants, timeout);
}

// Says how many participants arrived and, for a world barrier, which ranks did not.
auto StoreClient::BarrierTimeout(std::string_view name, int64_t generation, int participants, milliseconds timeout)
    -> llvm::Error {
  std::string prefix = fmt::format("avf/barrier/{}/{}/", name, generation);
  std::string head = fmt::format("rank {}: barrier {} on the rendezvous store at {} timed out after {}", rank_,
                                 QuoteKey(name), where_, FormatSeconds(timeout));
  auto count = Add(prefix + "count", 0);
  if (!count) return count.takeError();
  std::string arrived = fmt::format("{} of {} arrived", *count, Plural(participants, "participant", "participants"));
  if (world_size_ > (1 << 16)) return MakeError(StoreErrc::kTimeout, fmt::format("{}: {}", head, arrived));
  std::vector<std::string> keys;
  for (int r = 0; r < world_size_; ++r) keys.push_back(prefix + fmt::format("arrived/{}", r));
  auto present = Check(keys);
  if (!present) return present.takeError();
  std::vector<int> in, out;
  for (int r = 0; r < world_size_; ++r) ((*present)[static_cast<size_t>(r)] ? in : out).push_back(r);
  std::string detail = participants == world_size_ ? fmt::format("{} never arrived", FormatRanks(out))
                                                   : fmt::format("arrived: {}", FormatRanks(in));
  return MakeError(StoreErrc::kTimeout, fmt::format("{}: {}; {}", head, arrived, detail));
}

}  // namespace avf::rendezvous
