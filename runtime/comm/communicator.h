// The collective communicator of the runtime: all-reduce, reduce-scatter,
// all-gather, broadcast, point-to-point and barriers over fp32 and bf16
// buffers, with process groups split by colour (like ncclCommSplit). One
// interface, so the training loop does not care whether the bytes move over
// TCP (tcp_communicator.h) or, later, NCCL.
//
// Like NCCL, the virtual calls take untyped buffers, a count of elements and a
// DataType; the typed overloads (float* or Bf16*) below them pass the type for
// the caller. Every call is collective over the communicator's ranks unless it
// says otherwise, and every rank must make the same calls in the same order
// with the same sizes and types. Failures are llvm::Errors holding a
// CommError (comm/errors.h): a code and one sentence, a failure of the
// rendezvous store on the way included; nothing throws, and nothing waits
// longer than the communicator's timeout.
//
// Reductions are deterministic: element by element, the contributions are
// added in fp32 in rank order, ((x_0 + x_1) + x_2) + ... + x_{n-1}, then
// divided by n in fp32 for Avg. A bf16 reduction widens each contribution to
// fp32 (exactly), accumulates in that same order and rounds to bf16 once, at
// the end (round to nearest even, bf16.h), so it equals the fp32 reduction of
// the same values rounded once. Broadcast, AllGather and Send/Recv only move
// bytes.
#pragma once

#include <llvm/Support/Error.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "comm/errors.h"
#include "numeric/bf16.h"

namespace avf::comm {

using numeric::Bf16;
using numeric::ToBf16;
using numeric::ToFloat;

// Avg is the ordered sum divided by the number of ranks (see each
// implementation for the order).
enum class ReduceOp { kSum, kAvg };

auto ReduceOpName(ReduceOp op) -> std::string_view;

// The element type of a buffer. The values travel in message headers, so a
// rank that passes another type than its peers gets an error, not garbage.
enum class DataType : uint8_t { kF32 = 0, kBF16 = 1 };

// "fp32" or "bf16", as plan.json spells precisions.
auto DataTypeName(DataType type) -> std::string_view;

constexpr auto ElementBytes(DataType type) -> size_t { return type == DataType::kBF16 ? 2 : 4; }

// The element types of the typed overloads, and the DataType of each.
template <class T>
concept Element = std::same_as<T, float> || std::same_as<T, Bf16>;

template <Element T>
inline constexpr DataType kDataTypeOf = std::same_as<T, float> ? DataType::kF32 : DataType::kBF16;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual auto rank() const -> int = 0;
  virtual auto size() const -> int = 0;
  // True when every buffer must be GPU memory (NCCL; the caller makes sure
  // the work that writes a buffer is done before the call); false when
  // buffers are host memory (TCP).
  virtual auto device_memory() const -> bool { return false; }

  // In place: every rank ends with the reduction of every rank's `data`.
  virtual auto AllReduce(void* data, size_t count, DataType type, ReduceOp op) -> llvm::Error = 0;
  // `in` holds size() blocks of `count_per_rank`; rank r ends with the
  // reduction of every rank's block r in `out`, which may alias block rank()
  // of `in` but no other block.
  virtual auto ReduceScatter(const void* in, void* out, size_t count_per_rank, DataType type, ReduceOp op)
      -> llvm::Error = 0;
  // `out` (size() blocks of `count_per_rank`) ends with rank r's `in` in block
  // r. `in` may alias block rank() of `out`.
  virtual auto AllGather(const void* in, void* out, size_t count_per_rank, DataType type) -> llvm::Error = 0;
  // Every rank ends with `root`'s `data`.
  virtual auto Broadcast(void* data, size_t count, DataType type, int root) -> llvm::Error = 0;
  // Point to point, between this rank and `peer` only. Messages between two
  // ranks arrive in the order they were sent; a Send may wait until the peer
  // receives, so two ranks that both send large messages first deadlock (until
  // the timeout): use SendRecv for exchanges and rings.
  virtual auto Send(const void* data, size_t count, DataType type, int peer) -> llvm::Error = 0;
  virtual auto Recv(void* data, size_t count, DataType type, int peer) -> llvm::Error = 0;
  // Sends to `to` while receiving from `from`, both progressing together;
  // both buffers hold elements of `type`.
  virtual auto SendRecv(const void* send, size_t send_count, int to, void* recv, size_t recv_count, int from,
                        DataType type) -> llvm::Error = 0;
  // Returns once every rank has called it.
  virtual auto Barrier() -> llvm::Error = 0;
  // Collective over this communicator: ranks passing the same `color` (>= 0)
  // form a new communicator, ranked by (key, parent rank). Colour -1
  // (kNoColor) takes part but gets nullptr, like NCCL_SPLIT_NOCOLOR.
  virtual auto Split(int color, int key) -> llvm::Expected<std::unique_ptr<Communicator>> = 0;

  // Typed buffers (float* or Bf16*): the calls above with the type filled in.
  // They have fewer parameters than the untyped calls, so the two never compete.
  template <Element T>
  auto AllReduce(T* data, size_t count, ReduceOp op) -> llvm::Error {
    return AllReduce(static_cast<void*>(data), count, kDataTypeOf<T>, op);
  }
  template <Element T>
  auto ReduceScatter(const T* in, T* out, size_t count_per_rank, ReduceOp op) -> llvm::Error {
    return ReduceScatter(static_cast<const void*>(in), static_cast<void*>(out), count_per_rank, kDataTypeOf<T>, op);
  }
  template <Element T>
  auto AllGather(const T* in, T* out, size_t count_per_rank) -> llvm::Error {
    return AllGather(static_cast<const void*>(in), static_cast<void*>(out), count_per_rank, kDataTypeOf<T>);
  }
  template <Element T>
  auto Broadcast(T* data, size_t count, int root) -> llvm::Error {
    return Broadcast(static_cast<void*>(data), count, kDataTypeOf<T>, root);
  }
  template <Element T>
  auto Send(const T* data, size_t count, int peer) -> llvm::Error {
    return Send(static_cast<const void*>(data), count, kDataTypeOf<T>, peer);
  }
  template <Element T>
  auto Recv(T* data, size_t count, int peer) -> llvm::Error {
    return Recv(static_cast<void*>(data), count, kDataTypeOf<T>, peer);
  }
  template <Element T>
  auto SendRecv(const T* send, size_t send_count, int to, T* recv, size_t recv_count, int from) -> llvm::Error {
    return SendRecv(static_cast<const void*>(send), send_count, to, static_cast<void*>(recv), recv_count, from,
                    kDataTypeOf<T>);
  }
};

inline constexpr int kNoColor = -1;

}  // namespace avf::comm
