// The CPU communicator: a full mesh of TCP connections between the ranks of a
// group (loopback in tests, the pod network on a cluster), set up through the
// rendezvous store. Reductions run in a fixed order, so results are
// bit-identical across runs and rank counts (runtime/README.md#cpu-collectives):
//
//   auto store = std::shared_ptr(std::move(*StoreClient::Join(...)));
//   auto world = TcpCommunicator::Create({.store = store, .rank = r, .size = n, .token = t, .host = pod_ip});
//   (*world)->AllReduce(grads, count, ReduceOp::kAvg);
//   auto dp = (*world)->Split(/*color=*/r % tp, /*key=*/r);
//
// A peer that closes its connection, sends garbage or stays silent for the
// timeout fails the call with an error naming that rank; the communicator is
// then unusable (every later call fails at once), publishes its failure in the
// store and closes its connections, so that every other rank fails promptly too.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/errors.h"
#include "rendezvous/socket.h"
#include "rendezvous/store.h"

namespace avf::comm {

using std::chrono::milliseconds;

struct TcpOptions {
  // Shared with the communicators that Split makes (they build their meshes
  // through it too).
  std::shared_ptr<rendezvous::StoreClient> store;
  // Namespaces the store keys (avf/comm/<id>/...) and is checked in every
  // handshake, so two communicators never take each other's connections.
  std::string id = "world";
  int rank = 0;
  int size = 1;
  // The job token: a connection that does not present it is refused.
  std::string token;
  // The address other ranks reach this one at (the pod IP on a cluster); the
  // listener binds it on an ephemeral port.
  std::string host = "127.0.0.1";
  // The longest a collective waits without any progress from a peer.
  milliseconds timeout{60'000};
  // The longest building the mesh may take (ranks may start minutes apart).
  milliseconds setup_timeout{300'000};
  // The world rank of each rank, for messages (empty: the ranks are world ranks).
  std::vector<int> world_ranks;
};

class TcpCommunicator final : public Communicator {
 public:
  // Collective over the `size` ranks: listens, publishes host:port, connects to
  // the lower ranks and accepts the higher ones, each with a handshake carrying
  // the id, both ranks and the token.
  static auto Create(TcpOptions options) -> llvm::Expected<std::unique_ptr<TcpCommunicator>>;

  auto rank() const -> int override { return o_.rank; }
  auto size() const -> int override { return o_.size; }
  auto id() const -> const std::string& { return o_.id; }

  // The typed overloads of Communicator, which these declarations would hide.
  using Communicator::AllGather;
  using Communicator::AllReduce;
  using Communicator::Broadcast;
  using Communicator::Recv;
  using Communicator::ReduceScatter;
  using Communicator::Send;
  using Communicator::SendRecv;

  auto AllReduce(void* data, size_t count, DataType type, ReduceOp op) -> llvm::Error override;
  auto ReduceScatter(const void* in, void* out, size_t count_per_rank, DataType type, ReduceOp op)
      -> llvm::Error override;
  auto AllGather(const void* in, void* out, size_t count_per_rank, DataType type) -> llvm::Error override;
  auto Broadcast(void* data, size_t count, DataType type, int root) -> llvm::Error override;
  auto Send(const void* data, size_t count, DataType type, int peer) -> llvm::Error override;
  auto Recv(void* data, size_t count, DataType type, int peer) -> llvm::Error override;
  auto SendRecv(const void* send, size_t send_count, int to, void* recv, size_t recv_count, int from, DataType type)
      -> llvm::Error override;
  auto Barrier() -> llvm::Error override;
  auto Split(int color, int key) -> llvm::Expected<std::unique_ptr<Communicator>> override;

  // Which collective a message belongs to; part of every message header, so
  // ranks that call different collectives get an error instead of garbage.
  enum class Kind : uint8_t { kAllReduce = 1, kReduceScatter, kAllGather, kBroadcast, kSend, kBarrier, kSplit };

  // One peer's part of an exchange: at most one message each way. Messages
  // carry a 16-byte header (kind, data type, per-pair sequence number, length).
  struct Lane {
    int peer = 0;
    bool sends = false;
    const char* out = nullptr;
    size_t out_bytes = 0;
    bool receives = false;
    char* in = nullptr;
    size_t in_bytes = 0;
  };

 private:
  TcpCommunicator(TcpOptions options, std::vector<rendezvous::net::Fd> peers);
  // Moves every lane's messages, all sockets polled together with
  // non-blocking partial writes, so large messages both ways cannot deadlock.
  // `type` goes into the headers (Barrier and Split, which carry no elements,
  // pass kF32, whose header byte is 0).
  auto Exchange(Kind kind, DataType type, std::span<Lane> lanes) -> llvm::Error;
  // A lane with its headers and progress (tcp_communicator.cpp).
  struct Flow;
  auto Pump(Flow& flow, Kind kind) -> llvm::Error;
  auto PumpSend(Flow& flow, Kind kind) -> llvm::Error;
  auto PumpRecv(Flow& flow, Kind kind) -> llvm::Error;
  auto HeaderMismatch(const Flow& flow, Kind kind) -> llvm::Error;
  auto Stalled(const Flow& flow, Kind kind) -> llvm::Error;
  auto PeerClosed(int peer, Kind kind, int err) -> llvm::Error;
  // Reduces chunk c of every rank's `in` on rank c, accumulating in fp32 in
  // rank order 0..n-1 and rounding to T once; this rank's reduced chunk goes
  // to `out`. T is float or Bf16; defined and used in tcp_communicator.cpp only.
  template <Element T>
  auto ReduceChunks(const T* in, T* out, std::span<const size_t> offsets, Kind kind, ReduceOp op) -> llvm::Error;
  // Every rank's chunk (at element offsets[r] of `data`) to every rank.
  auto GatherChunks(void* data, std::span<const size_t> offsets, DataType type, Kind kind) -> llvm::Error;
  auto AllGatherBytes(const std::string& mine, Kind kind) -> llvm::Expected<std::vector<std::string>>;
  // The first failure, if any: marks the communicator unusable, tells the
  // store, closes every connection.
  auto Fail(CommErrc code, std::string message) -> llvm::Error;
  auto Usable(Kind kind) -> llvm::Error;
  // Usable, and `type` is a DataType this communicator knows (a cast integer
  // might not be).
  auto Ready(Kind kind, DataType type) -> llvm::Error;
  auto CheckPeer(int peer, std::string_view role, Kind kind) -> llvm::Error;
  auto Name(int rank) const -> std::string;

  TcpOptions o_;
  std::vector<rendezvous::net::Fd> peers_;  // by rank; this rank's slot is empty
  std::vector<uint32_t> sent_, received_;   // messages per peer, for the headers
  std::optional<Failure> broken_;
  int splits_ = 0;
};

auto KindName(TcpCommunicator::Kind kind) -> std::string_view;

// The store keys of communicator `id`: rank r's address and its failure.
auto AddressKey(std::string_view id, int rank) -> std::string;
auto FailureKey(std::string_view id, int rank) -> std::string;

}  // namespace avf::comm
