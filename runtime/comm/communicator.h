// The collective communicator of the runtime: all-reduce, reduce-scatter,
// all-gather, broadcast, point-to-point and barriers over fp32 buffers, with
// process groups split by colour (like ncclCommSplit). One interface, so the
// training loop does not care whether the bytes move over TCP (tcp_communicator.h)
// or, later, NCCL.
//
// Every call is collective over the communicator's ranks unless it says
// otherwise, and every rank must make the same calls in the same order with the
// same sizes. Failures are llvm::Errors holding a rendezvous::StoreError
// (rendezvous/errors.h), so avf-run handles one error type for the store and
// the communicators; nothing throws, and nothing waits longer than the
// communicator's timeout.
#pragma once

#include <llvm/Support/Error.h>

#include <cstddef>
#include <memory>
#include <string_view>

namespace avf::comm {

// Avg is the ordered sum divided by the number of ranks (see each
// implementation for the order).
enum class ReduceOp { kSum, kAvg };

auto ReduceOpName(ReduceOp op) -> std::string_view;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual auto rank() const -> int = 0;
  virtual auto size() const -> int = 0;

  // In place: every rank ends with the reduction of every rank's `data`.
  virtual auto AllReduce(float* data, size_t count, ReduceOp op) -> llvm::Error = 0;
  // `in` holds size() blocks of `count_per_rank`; rank r ends with the
  // reduction of every rank's block r in `out`, which may alias block rank()
  // of `in` but no other block.
  virtual auto ReduceScatter(const float* in, float* out, size_t count_per_rank, ReduceOp op) -> llvm::Error = 0;
  // `out` (size() blocks of `count_per_rank`) ends with rank r's `in` in block
  // r. `in` may alias block rank() of `out`.
  virtual auto AllGather(const float* in, float* out, size_t count_per_rank) -> llvm::Error = 0;
  // Every rank ends with `root`'s `data`.
  virtual auto Broadcast(float* data, size_t count, int root) -> llvm::Error = 0;
  // Point to point, between this rank and `peer` only. Messages between two
  // ranks arrive in the order they were sent; a Send may wait until the peer
  // receives, so two ranks that both send large messages first deadlock (until
  // the timeout): use SendRecv for exchanges and rings.
  virtual auto Send(const float* data, size_t count, int peer) -> llvm::Error = 0;
  virtual auto Recv(float* data, size_t count, int peer) -> llvm::Error = 0;
  // Sends to `to` while receiving from `from`, both progressing together.
  virtual auto SendRecv(const float* send, size_t send_count, int to, float* recv, size_t recv_count, int from)
      -> llvm::Error = 0;
  // Returns once every rank has called it.
  virtual auto Barrier() -> llvm::Error = 0;
  // Collective over this communicator: ranks passing the same `color` (>= 0)
  // form a new communicator, ranked by (key, parent rank). Colour -1
  // (kNoColor) takes part but gets nullptr, like NCCL_SPLIT_NOCOLOR.
  virtual auto Split(int color, int key) -> llvm::Expected<std::unique_ptr<Communicator>> = 0;
};

inline constexpr int kNoColor = -1;

}  // namespace avf::comm
