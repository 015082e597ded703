// The rendezvous store: a small TCP key/value store served by rank 0, used by
// every rank (rank 0 too) to exchange the NCCL unique id, peer addresses and
// barriers before any communicator exists. The wire protocol is in wire.h and
// runtime/README.md#rendezvous-store.
//
//   auto server = StoreServer::Start({.port = 29500, .world_size = 8, .token = t, .plan_sha256 = p});  // rank 0
//   auto client = StoreClient::Join({.host = master_addr, .port = 29500, .rank = r, .world_size = 8, .token = t,
//                                    .plan_sha256 = p});
//   client->Set("nccl/0", id);  client->Get("nccl/0", 30s);  client->Barrier("init", 8, 60s);
//
// Every operation has a deadline; nothing blocks forever. Failures are
// llvm::Errors holding a StoreError (errors.h); nothing throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <llvm/Support/Error.h>

#include "rendezvous/errors.h"
#include "rendezvous/hello.h"
#include "rendezvous/socket.h"
#include "rendezvous/wire.h"

namespace avf::rendezvous {

using std::chrono::milliseconds;

struct ServerOptions {
  // Empty: every interface. On Kubernetes MASTER_ADDR names a Service, whose
  // address is not local to the pod, so rank 0 binds the wildcard address.
  std::string host;
  uint16_t port = 0;  // 0: the kernel picks one (tests); port() reports it
  int world_size = 1;
  std::string token;
  // The SHA-256 of the plan.json rank 0 read (wire::IsPlanSha256); a rank
  // that read other bytes is refused, so that no two ranks train different plans.
  std::string plan_sha256;
  // A connection that has not sent a valid hello by then is closed (it holds
  // no rank, and may be a port scanner).
  milliseconds handshake_timeout{10'000};
  uint32_t max_frame_bytes = wire::kMaxFrameBytes;
  // Called (from the server thread, with the store locked: do not call back
  // into the server) for each rejected or misbehaving connection.
  std::function<void(std::string_view)> log;
};

struct ServerStats {
  int connections = 0;      // open sockets, joined or not
  int joined_ranks = 0;     // ranks that ever joined
  int connected_ranks = 0;  // ranks with an open connection now
  int parked = 0;           // GET/WAIT/WAIT_ALL requests waiting for a key or a rank
  int rejected = 0;         // connections closed for a bad hello or a protocol error
  size_t keys = 0;
};

// Serves the store from a background thread until Shutdown() or destruction.
class StoreServer {
 public:
  // Binds, listens and starts the thread; a bind failure is a kIo error that
  // names the address.
  static auto Start(ServerOptions options) -> llvm::Expected<std::unique_ptr<StoreServer>>;
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  auto operator=(const StoreServer&) -> StoreServer& = delete;

  auto port() const -> uint16_t;
  // Blocks until every rank 0..world_size-1 has joined; on timeout a kTimeout
  // error names the ranks that never came.
  auto WaitForAll(milliseconds timeout) -> llvm::Error;
  auto Stats() const -> ServerStats;
  // Answers every parked request with kShutdown, closes every connection and
  // joins the thread. Idempotent; the destructor calls it.
  void Shutdown();

  class Impl;

 private:
  explicit StoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ClientOptions {
  std::string host = "127.0.0.1";  // MASTER_ADDR
  uint16_t port = 0;               // MASTER_PORT
  int rank = 0;
  int world_size = 1;
  std::string token;
  std::string plan_sha256;  // of the plan.json this rank read
  // Total time for connecting, retried with backoff (rank 0 may start later).
  milliseconds connect_timeout{300'000};
  // The longest wait for the reply to a request that does not block (and the
  // slack on top of a blocking request's own timeout) before the store counts
  // as unresponsive.
  milliseconds io_timeout{30'000};
};

// One rank's connection to the store. The methods may be called from several
// threads; they take turns on the one connection. After a connection-level
// failure (lost connection, malformed reply, no reply in time) every later
// call fails with the first error.
class StoreClient {
 public:
  // Connects (retrying until connect_timeout) and joins: the hello carries the
  // protocol magic and version, the token, the rank, the world size and the
  // plan's SHA-256, and the store's refusal comes back as a StoreError in the
  // user's terms.
  static auto Join(const ClientOptions& options) -> llvm::Expected<std::unique_ptr<StoreClient>>;

  auto Set(std::string_view key, std::string_view value) -> llvm::Error;
  // Blocks until some rank sets `key`, at most `timeout`.
  auto Get(std::string_view key, milliseconds timeout) -> llvm::Expected<std::string>;
  // Adds `delta` to the counter at `key` (absent: 0) and returns the new
  // value. Counters are stored as decimal text, so Get reads them too.
  auto Add(std::string_view key, int64_t delta) -> llvm::Expected<int64_t>;
  // Blocks until every key exists; a timeout names the missing ones.
  auto Wait(std::span<const std::string> keys, milliseconds timeout) -> llvm::Error;
  // Whether each key exists now (no waiting).
  auto Check(std::span<const std::string> keys) -> llvm::Expected<std::vector<bool>>;
  // Blocks until every rank of the world has joined the store; a timeout
  // names the ranks that never came.
  auto WaitForAll(milliseconds timeout) -> llvm::Error;
  // Returns when `participants` callers (this rank included) have reached the
  // barrier `name`. Reusable: the n-th call of a name waits for the n-th
  // arrivals. Keys live under "avf/barrier/<name>/". A timeout says how many
  // arrived and, for a world barrier, which ranks did not.
  auto Barrier(std::string_view name, int participants, milliseconds timeout) -> llvm::Error;

  auto rank() const -> int { return rank_; }
  auto world_size() const -> int { return world_size_; }
  // "host:port" as given, for messages.
  auto where() const -> const std::string& { return where_; }

 private:
  StoreClient(net::Fd fd, const ClientOptions& options);
  // One request and its reply; a StoreError for an error reply or a failure
  // of the connection. `what` names the request in messages.
  auto Call(std::string frame, milliseconds reply_within, std::string_view what) -> llvm::Expected<std::string>;
  auto CallLocked(const std::string& frame, milliseconds reply_within, std::string_view what)
      -> llvm::Expected<std::string>;
  auto ReadReply(net::Deadline deadline, std::string_view what) -> llvm::Expected<std::string>;
  auto Broken(StoreErrc code, std::string message) -> llvm::Error;
  auto CheckKey(std::string_view key) const -> llvm::Error;
  auto BarrierTimeout(std::string_view name, int64_t generation, int participants, milliseconds timeout) -> llvm::Error;

  net::Fd fd_;
  std::string where_;
  int rank_ = 0;
  int world_size_ = 1;
  milliseconds io_timeout_;
  std::mutex mu_;
  // Set after a connection-level failure.
  std::optional<Failure> broken_;
  std::unordered_map<std::string, int64_t> barrier_calls_;
};

}  // namespace avf::rendezvous
