// The GPU communicator: the Communicator interface over NCCL, one rank per
// CUDA device (NCCL refuses two ranks on one GPU). Built only where the CUDA
// toolkit and NCCL are found (library avf_comm_nccl, AVIFLOW_HAVE_CUDA); it
// links the CUDA runtime (shared) and NCCL, never libcuda, so binaries start
// on machines without a driver and fail Create with a sentence instead.
//
//   auto store = std::shared_ptr(std::move(*StoreClient::Join(...)));
//   auto world = NcclCommunicator::Create({.store = store, .rank = r, .size = n, .device = local_rank});
//   (*world)->AllReduce(device_grads, count, ReduceOp::kAvg);   // DEVICE pointers
//   auto dp = (*world)->Split(/*color=*/r % tp, /*key=*/r);
//
// Buffers are device pointers (cudaMalloc or managed memory on this rank's
// device); a host pointer is refused with kInvalidArgument before NCCL sees
// it. The buffers must be ready when a call is made: the collectives run on
// the communicator's own non-blocking stream, which does not wait for work
// the caller queued on other streams, so synchronize the work that writes
// them first. Every call returns once its result is in place (the stream has
// completed), as the interface requires. Each call makes this rank's device
// the calling thread's current CUDA device; use one thread at a time.
//
// Failures never hang: the NCCL communicator is non-blocking
// (ncclConfig_t::blocking = 0), and init, split and every collective are
// polled (ncclCommGetAsyncError, cudaStreamQuery) against a deadline. On a
// timeout or an NCCL/CUDA error the communicator is aborted (ncclCommAbort),
// the failure is published in the store (FailureKey) and the call returns an
// error naming what did not finish; every later call fails at once with it.
//
// Reduction order: NOT the CPU backend's fixed rank order (communicator.h).
// NCCL picks a ring or tree algorithm, chunking and protocol by size and
// topology, and a ring starts each chunk's sum at a different rank, so fp32
// results are not bit-identical to TcpCommunicator's and may change with the
// rank count, message size, topology, NCCL version and NCCL_ALGO/NCCL_PROTO.
// NCCL documents no summation order; its maintainers describe the sum as
// order-dependent by design and suggest reduce + broadcast from a fixed root
// for one order (NVIDIA/nccl#157). bf16 travels and is summed as bf16 between
// steps (a rounding per step, not the CPU backend's single rounding), and
// ncclAvg on floating types multiplies each contribution by 1/n in the element
// type before summing (NCCL 2.28 src/enqueue.cc), instead of dividing the sum.
// Exact equality holds only for sums that are exact in any order (small
// integers, 1/n a power of two for Avg).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "comm/communicator.h"
#include "comm/errors.h"
#include "rendezvous/store.h"

// The NCCL and CUDA handle types (ncclComm_t, cudaStream_t are pointers to
// these), declared here so that users of this header need no CUDA headers.
struct ncclComm;
struct CUstream_st;

namespace avf::comm {

using std::chrono::milliseconds;

struct NcclOptions {
  // Rank 0 publishes the NCCL unique id here; the others read it. Also where
  // a failing rank publishes its failure (FailureKey), for the others' errors.
  std::shared_ptr<rendezvous::StoreClient> store{};
  // Namespaces the store keys (avf/comm/<id>/...) and names NCCL's logs.
  std::string id = "world";
  int rank = 0;
  int size = 1;
  // This rank's CUDA device (its local rank, usually). Two ranks of one
  // communicator must not share a device.
  int device = 0;
  // The longest one collective (or Split, or Barrier) may take in total.
  milliseconds timeout{60'000};
  // The longest Create may take: waiting for the unique id plus NCCL's init,
  // which waits for every rank (ranks may start minutes apart).
  milliseconds setup_timeout{300'000};
};

// The NCCL library this binary runs with: ncclGetVersion's code (22809 for
// 2.28.9) taken apart. Needs no GPU.
struct NcclVersionInfo {
  int code = 0;
  int major = 0, minor = 0, patch = 0;
  auto text() const -> std::string;  // "2.28.9"
};
auto NcclVersion() -> llvm::Expected<NcclVersionInfo>;

// How many CUDA devices this process sees (cudaGetDeviceCount); an error,
// with CUDA's text, where there is no driver or no device (the two cases a
// GPU-less machine gives). This initializes CUDA in the calling process,
// after which forked children cannot use CUDA: a process that forks ranks
// (tests) should ask from a child.
auto VisibleCudaDevices() -> llvm::Expected<int>;

// Whether NCCL can run here: the library answers ncclGetVersion and at least
// one CUDA device is visible. Same caveat about fork as VisibleCudaDevices.
auto NcclAvailable() -> bool;

class NcclCommunicator final : public Communicator {
 public:
  // Collective over the `size` ranks. Checks, in order: the options; that a
  // CUDA device is visible (cudaGetDeviceCount, before anything else touches
  // CUDA or the store) and that `device` is one of them; then rank 0 calls
  // ncclGetUniqueId and sets it at NcclIdKey(id), the others Get it (a rank 0
  // that failed sets its error there instead, so they fail at once); then
  // cudaSetDevice and a non-blocking ncclCommInitRankConfig polled until it
  // finishes or setup_timeout passes (then ncclCommAbort and an error).
  static auto Create(NcclOptions options) -> llvm::Expected<std::unique_ptr<NcclCommunicator>>;
  // Finalizes and destroys the NCCL communicator (bounded by the timeout,
  // then aborted), then frees the stream and the barrier's buffer.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  auto operator=(const NcclCommunicator&) -> NcclCommunicator& = delete;

  auto rank() const -> int override { return o_.rank; }
  auto size() const -> int override { return o_.size; }
  auto device_memory() const -> bool override { return true; }
  auto id() const -> const std::string& { return o_.id; }
  auto device() const -> int { return o_.device; }

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
  // ncclSend and ncclRecv inside one ncclGroupStart/End, so both progress.
  auto SendRecv(const void* send, size_t send_count, int to, void* recv, size_t recv_count, int from, DataType type)
      -> llvm::Error override;
  // A one-element fp32 all-reduce on a device buffer allocated at Create.
  auto Barrier() -> llvm::Error override;
  // ncclCommSplit (kNoColor -> NCCL_SPLIT_NOCOLOR, giving nullptr). NCCL
  // ranks the child by (key, parent rank), as the interface says. The child
  // has the id "<id>.s<n>.c<colour>", its own stream and this one's timeouts.
  auto Split(int color, int key) -> llvm::Expected<std::unique_ptr<Communicator>> override;

  // One call's description, for error messages (built only on failure).
  struct Call {
    std::string_view name;
    size_t count = 0;  // 0: described by its name alone
    DataType type = DataType::kF32;
    milliseconds limit{0};  // the time it had, for messages; 0: the timeout
  };

 private:
  explicit NcclCommunicator(NcclOptions options);
  // Stream, barrier buffer and the NCCL communicator (non-blocking init,
  // polled until `deadline`).
  auto Init(const void* unique_id, std::chrono::steady_clock::time_point deadline) -> llvm::Error;
  auto MakeStreamAndScratch() -> llvm::Error;
  // A split's child once the parent's split finished: its init state, rank,
  // size, stream and barrier buffer.
  auto FinishChild(std::unique_ptr<NcclCommunicator> child, std::chrono::steady_clock::time_point deadline)
      -> llvm::Expected<std::unique_ptr<Communicator>>;
  // Runs one NCCL operation: Usable, the device, `enqueue` (an NCCL call or
  // group), then waits until NCCL has enqueued it and the stream completed.
  template <class Enqueue>
  auto Run(const Call& call, Enqueue&& enqueue) -> llvm::Error;
  // Polls ncclCommGetAsyncError on `comm` while it is ncclInProgress.
  auto WaitComm(ncclComm* comm, const Call& call, std::chrono::steady_clock::time_point deadline) -> llvm::Error;
  // Polls cudaStreamQuery (and the async error) until the stream is idle.
  auto WaitStream(const Call& call, std::chrono::steady_clock::time_point deadline) -> llvm::Error;
  // The first failure: marks the communicator unusable, publishes it in the
  // store, aborts the NCCL communicator.
  auto Fail(CommErrc code, std::string message) -> llvm::Error;
  auto NcclFailure(const Call& call, int result) -> llvm::Error;
  auto CudaFailure(const Call& call, int error, std::string_view function) -> llvm::Error;
  auto Timeout(const Call& call, std::string_view stage) -> llvm::Error;
  auto Usable(const Call& call) -> llvm::Error;
  // Usable, and call.type a DataType this communicator knows.
  auto Ready(const Call& call) -> llvm::Error;
  // `p` is device (or managed) memory of this rank's device; unchecked when
  // call.count is 0, since NCCL then reads nothing.
  auto CheckBuffer(const Call& call, const void* p, std::string_view role) -> llvm::Error;
  // `peer` is a rank of this communicator, and not this one unless may_be_self.
  auto CheckPeer(const Call& call, int peer, std::string_view role, bool may_be_self = false) -> llvm::Error;
  // " (rank 3 failed first: ...)" from the store's failure keys, or "".
  auto PeerFailures() -> std::string;
  auto Describe(const Call& call) const -> std::string;
  auto Name() const -> std::string;

  NcclOptions o_;
  ncclComm* comm_ = nullptr;
  CUstream_st* stream_ = nullptr;
  float* scratch_ = nullptr;  // Barrier's element, on the device
  std::optional<Failure> broken_;
  int splits_ = 0;
};

// Where rank 0 puts the unique id of communicator `id`: "I" + the 128 id
// bytes, or "E" + the sentence saying why rank 0 could not create it.
auto NcclIdKey(std::string_view id) -> std::string;

}  // namespace avf::comm
