// NcclCommunicator: the unique id through the rendezvous store, a
// non-blocking NCCL communicator, and every call polled against a deadline so
// that a failed peer gives an error instead of a hang (nccl_communicator.h).
#include "comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "comm/tcp_communicator.h"  // FailureKey, shared with the CPU communicator
#include "rendezvous/errors.h"

namespace avf::comm {

namespace {

using Clock = std::chrono::steady_clock;

// "I" + the id bytes, or "E" + rank 0's error (NcclIdKey).
constexpr char kIdTag = 'I';
constexpr char kErrorTag = 'E';

auto CudaText(cudaError_t e) -> std::string {
  return fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e));
}

// NCCL's sentence for the code plus its last detailed message, when it has one.
auto NcclText(ncclComm_t comm, ncclResult_t r) -> std::string {
  std::string text = ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += fmt::format(" ({})", last);
  return text;
}

auto CodeOf(ncclResult_t r) -> CommErrc {
  switch (r) {
    case ncclRemoteError: return CommErrc::kConnectionLost;
    case ncclInvalidArgument:
    case ncclInvalidUsage: return CommErrc::kInvalidArgument;
    default: return CommErrc::kIo;
  }
}

auto NcclType(DataType t) -> ncclDataType_t { return t == DataType::kBF16 ? ncclBfloat16 : ncclFloat32; }
auto NcclOp(ReduceOp op) -> ncclRedOp_t { return op == ReduceOp::kAvg ? ncclAvg : ncclSum; }
auto Known(DataType t) -> bool { return t == DataType::kF32 || t == DataType::kBF16; }
auto Known(ReduceOp op) -> bool { return op == ReduceOp::kSum || op == ReduceOp::kAvg; }
auto Remaining(Clock::time_point deadline) -> milliseconds {
  return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

// Polling pace: yields for the first 100 us (small collectives finish in
// microseconds), then sleeps 10 us doubling to 250 us, so long waits cost
// little CPU and add at most a quarter of a millisecond.
class Pace {
 public:
  void Wait() {
    if (Clock::now() - start_ < std::chrono::microseconds(100)) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, std::chrono::microseconds(250));
  }

 private:
  Clock::time_point start_ = Clock::now();
  std::chrono::microseconds sleep_{10};
};

// The state of a non-blocking communicator once it leaves ncclInProgress, or
// ncclInProgress itself if the deadline came first.
auto PollState(ncclComm_t comm, Clock::time_point deadline) -> ncclResult_t {
  Pace pace;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (Clock::now() >= deadline) return ncclInProgress;
    pace.Wait();
  }
}

auto VisibleDevicesNote() -> std::string {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? fmt::format("; CUDA_VISIBLE_DEVICES={}", v) : std::string();
}

// Why this rank cannot use `o.device`, or "" when it can. Called before
// anything else touches CUDA, NCCL or the store.
auto DeviceProblem(const NcclOptions& o) -> std::string {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("no CUDA device is visible to rank {} (cudaGetDeviceCount: {}{}); NCCL needs one GPU per rank",
                       o.rank, CudaText(e), VisibleDevicesNote());
  }
  if (count == 0) {
    return fmt::format(
        "no CUDA device is visible to rank {} (cudaGetDeviceCount: 0 devices{}); NCCL needs one GPU "
        "per rank",
        o.rank, VisibleDevicesNote());
  }
  if (o.device >= count) {
    return fmt::format("rank {} was given CUDA device {}, but only {} visible (0..{}{}); NCCL needs one GPU per rank",
                       o.rank, o.device, count == 1 ? "1 is" : fmt::format("{} are", count), count - 1,
                       VisibleDevicesNote());
  }
  return "";
}

auto CheckOptions(const NcclOptions& o) -> llvm::Error {
  std::string problem;
  if (!o.store) {
    problem = "has no rendezvous store";
  } else if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    problem = "needs a rank from 0 to its size - 1";
  } else if (o.device < 0) {
    problem = "needs a CUDA device index >= 0";
  } else {
    return llvm::Error::success();
  }
  return MakeError(CommErrc::kInvalidArgument, fmt::format("NCCL communicator '{}' {} (rank {}, size {}, device {})",
                                                           o.id, problem, o.rank, o.size, o.device));
}

// A failure before the NCCL communicator exists: rank 0 puts it where the
// others wait for the id, so they fail at once; any rank publishes it.
auto EarlyFailure(const NcclOptions& o, CommErrc code, std::string message) -> llvm::Error {
  if (o.rank == 0) llvm::consumeError(o.store->Set(NcclIdKey(o.id), std::string(1, kErrorTag) + message));
  llvm::consumeError(o.store->Set(FailureKey(o.id, o.rank), message));
  return MakeError(code, std::move(message));
}

// Rank 0 makes the id and publishes it; the others wait for it until `deadline`.
auto ShareUniqueId(const NcclOptions& o, Clock::time_point deadline) -> llvm::Expected<ncclUniqueId> {
  ncclUniqueId id{};
  const std::string key = NcclIdKey(o.id);
  if (o.rank == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
      return EarlyFailure(
          o, CodeOf(r),
          fmt::format("rank 0 of communicator '{}': ncclGetUniqueId failed: {}", o.id, NcclText(nullptr, r)));
    }
    std::string value(1, kIdTag);
    value.append(id.internal, sizeof id.internal);
    if (auto e = o.store->Set(key, value)) return AsCommError(std::move(e));
    return id;
  }
  auto value = o.store->Get(key, Remaining(deadline));
  if (!value) {
    auto f = TakeFailure(value.takeError());
    return MakeError(f.code, fmt::format("rank {} of communicator '{}' waited for rank 0's NCCL unique id: {}", o.rank,
                                         o.id, f.message));
  }
  if (!value->empty() && (*value)[0] == kErrorTag) {
    return MakeError(CommErrc::kConnectionLost,
                     fmt::format("rank {} of communicator '{}' cannot start: rank 0 could not create it: {}", o.rank,
                                 o.id, value->substr(1)));
  }
  if (value->size() != 1 + sizeof id.internal || (*value)[0] != kIdTag) {
    return MakeError(CommErrc::kMalformed,
                     fmt::format("rank {} of communicator '{}': {} holds {} bytes, not an NCCL unique id", o.rank, o.id,
                                 rendezvous::QuoteKey(key), value->size()));
  }
  std::memcpy(id.internal, value->data() + 1, sizeof id.internal);
  return id;
}

}  // namespace

auto NcclIdKey(std::string_view id) -> std::string { return fmt::format("avf/comm/{}/nccl-id", id); }

auto NcclVersionInfo::text() const -> std::string { return fmt::format("{}.{}.{}", major, minor, patch); }

auto NcclVersion() -> llvm::Expected<NcclVersionInfo> {
  int code = 0;
  if (ncclResult_t r = ncclGetVersion(&code); r != ncclSuccess) {
    return MakeError(CommErrc::kIo, "ncclGetVersion failed: " + NcclText(nullptr, r));
  }
  NcclVersionInfo v{.code = code};
  // NCCL_VERSION(): X * 1000 + Y * 100 + Z up to 2.8, X * 10000 + Y * 100 + Z since 2.9.
  const int scale = code < 10000 ? 1000 : 10000;
  v.major = code / scale;
  v.minor = (code % scale) / 100;
  v.patch = code % 100;
  return v;
}

auto VisibleCudaDevices() -> llvm::Expected<int> {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    (void)cudaGetLastError();
    return MakeError(CommErrc::kIo, "cudaGetDeviceCount: " + CudaText(e));
  }
  return count;
}

auto NcclAvailable() -> bool {
  auto version = NcclVersion();
  if (!version) {
    llvm::consumeError(version.takeError());
    return false;
  }
  auto devices = VisibleCudaDevices();
  if (!devices) {
    llvm::consumeError(devices.takeError());
    return false;
  }
  return *devices > 0;
}

NcclCommunicator::NcclCommunicator(NcclOptions options) : o_(std::move(options)) {}

auto NcclCommunicator::Create(NcclOptions options) -> llvm::Expected<std::unique_ptr<NcclCommunicator>> {
  if (auto e = CheckOptions(options)) return e;
  const auto deadline = Clock::now() + options.setup_timeout;
  if (std::string problem = DeviceProblem(options); !problem.empty()) {
    return EarlyFailure(options, CommErrc::kIo, std::move(problem));
  }
  auto id = ShareUniqueId(options, deadline);
  if (!id) return id.takeError();
  std::unique_ptr<NcclCommunicator> comm(new NcclCommunicator(std::move(options)));
  if (auto e = comm->Init(&*id, deadline)) return e;
  return comm;
}

auto NcclCommunicator::MakeStreamAndScratch() -> llvm::Error {
  const Call call{.name = "setup"};
  if (cudaError_t e = cudaSetDevice(o_.device); e != cudaSuccess) return CudaFailure(call, e, "cudaSetDevice");
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return CudaFailure(call, e, "cudaStreamCreateWithFlags");
  }
  stream_ = stream;
  if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&scratch_), sizeof(float)); e != cudaSuccess) {
    scratch_ = nullptr;
    return CudaFailure(call, e, "cudaMalloc");
  }
  if (cudaError_t e = cudaMemset(scratch_, 0, sizeof(float)); e != cudaSuccess) {
    return CudaFailure(call, e, "cudaMemset");
  }
  return llvm::Error::success();
}

auto NcclCommunicator::Init(const void* unique_id, Clock::time_point deadline) -> llvm::Error {
  const Call call{.name = "NCCL init (ncclCommInitRankConfig)", .limit = o_.setup_timeout};
  if (auto e = MakeStreamAndScratch()) return e;
  ncclUniqueId id;
  std::memcpy(&id, unique_id, sizeof id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;              // init and every call return at once; we poll
  config.commName = o_.id.c_str();  // NCCL keeps the pointer: o_ lives as long as the comm
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, o_.size, id, o_.rank, &config);
  comm_ = comm;
  if (r != ncclSuccess && r != ncclInProgress) return NcclFailure(call, r);
  if (comm_ == nullptr) return Fail(CommErrc::kIo, fmt::format("{}: {} gave no communicator", Name(), call.name));
  return WaitComm(comm_, call, deadline);
}

NcclCommunicator::~NcclCommunicator() {
  (void)cudaSetDevice(o_.device);
  if (comm_ != nullptr) {
    // Finalize flushes this rank's operations and may wait for its peers; a
    // broken communicator, or one whose finalize does not finish, is aborted.
    bool clean = false;
    if (!broken_) {
      ncclResult_t r = ncclCommFinalize(comm_);
      clean = (r == ncclSuccess || r == ncclInProgress) && PollState(comm_, Clock::now() + o_.timeout) == ncclSuccess;
    }
    (void)(clean ? ncclCommDestroy(comm_) : ncclCommAbort(comm_));
  }
  if (scratch_ != nullptr) (void)cudaFree(scratch_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

auto NcclCommunicator::Name() const -> std::string {
  return fmt::format("rank {} of communicator '{}'", o_.rank, o_.id);
}

auto NcclCommunicator::Describe(const Call& call) const -> std::string {
  if (call.count == 0) return std::string(call.name);
  return fmt::format("{} of {} {} element{}", call.name, call.count, DataTypeName(call.type),
                     call.count == 1 ? "" : "s");
}

auto NcclCommunicator::PeerFailures() -> std::string {
  if (!o_.store || o_.size < 2) return "";
  std::vector<std::string> keys;
  std::vector<int> ranks;
  for (int r = 0; r < o_.size; ++r) {
    if (r == o_.rank) continue;
    keys.push_back(FailureKey(o_.id, r));
    ranks.push_back(r);
  }
  auto exists = o_.store->Check(keys);
  if (!exists) {
    llvm::consumeError(exists.takeError());
    return "";
  }
  std::vector<int> failed;
  for (size_t i = 0; i < exists->size(); ++i) {
    if ((*exists)[i]) failed.push_back(ranks[i]);
  }
  if (failed.empty()) return "";
  auto first = o_.store->Get(FailureKey(o_.id, failed[0]), milliseconds(0));
  std::string cause = first ? *first : "(its message could not be read)";
  llvm::consumeError(first.takeError());
  std::string more = failed.size() > 1
                         ? fmt::format("; {} failed too", rendezvous::FormatRanks(std::span(failed).subspan(1)))
                         : std::string();
  return fmt::format(" (rank {} failed: {}{})", failed[0], cause, more);
}

auto NcclCommunicator::Fail(CommErrc code, std::string message) -> llvm::Error {
  broken_ = Failure{code, message};
  if (o_.store) llvm::consumeError(o_.store->Set(FailureKey(o_.id, o_.rank), message));
  if (comm_ != nullptr) {
    // Makes NCCL's kernels and threads give up; returns once they have.
    (void)ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  return MakeError(code, std::move(message));
}

auto NcclCommunicator::NcclFailure(const Call& call, int result) -> llvm::Error {
  auto r = static_cast<ncclResult_t>(result);
  return Fail(CodeOf(r), fmt::format("{}: {} failed: {}{}; the communicator was aborted", Name(), Describe(call),
                                     NcclText(comm_, r), PeerFailures()));
}

auto NcclCommunicator::CudaFailure(const Call& call, int error, std::string_view function) -> llvm::Error {
  auto e = static_cast<cudaError_t>(error);
  (void)cudaGetLastError();
  return Fail(CommErrc::kIo, fmt::format("{}: {} failed: {}: {}", Name(), Describe(call), function, CudaText(e)));
}

auto NcclCommunicator::Timeout(const Call& call, std::string_view stage) -> llvm::Error {
  const milliseconds limit = call.limit.count() > 0 ? call.limit : o_.timeout;
  return Fail(CommErrc::kTimeout,
              fmt::format("{}: {} did not finish within {} ({}): a peer failed, exited, is not running or is in "
                          "another call{}; the communicator was aborted",
                          Name(), Describe(call), rendezvous::FormatSeconds(limit), stage, PeerFailures()));
}

auto NcclCommunicator::WaitComm(ncclComm* comm, const Call& call, Clock::time_point deadline) -> llvm::Error {
  ncclResult_t state = PollState(comm, deadline);
  if (state == ncclSuccess) return llvm::Error::success();
  if (state == ncclInProgress) return Timeout(call, "NCCL had not finished it");
  return NcclFailure(call, state);
}

auto NcclCommunicator::WaitStream(const Call& call, Clock::time_point deadline) -> llvm::Error {
  Pace pace;
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return llvm::Error::success();
    if (e != cudaErrorNotReady) return CudaFailure(call, e, "cudaStreamQuery");
    // A peer's failure shows here while the kernels wait for it.
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess) return NcclFailure(call, r);
    if (state != ncclSuccess && state != ncclInProgress) return NcclFailure(call, state);
    if (Clock::now() >= deadline) return Timeout(call, "its kernels had not completed");
    pace.Wait();
  }
}

template <class Enqueue>
auto NcclCommunicator::Run(const Call& call, Enqueue&& enqueue) -> llvm::Error {
  const auto deadline = Clock::now() + o_.timeout;
  if (cudaError_t e = cudaSetDevice(o_.device); e != cudaSuccess) return CudaFailure(call, e, "cudaSetDevice");
  ncclResult_t r = enqueue();
  if (r != ncclSuccess && r != ncclInProgress) return NcclFailure(call, r);
  // A non-blocking call may return before its work is on the stream: first
  // wait until NCCL has enqueued it, or the stream would look idle.
  if (auto e = WaitComm(comm_, call, deadline)) return e;
  return WaitStream(call, deadline);
}

auto NcclCommunicator::Usable(const Call& call) -> llvm::Error {
  if (!broken_) return llvm::Error::success();
  return MakeError(broken_->code,
                   fmt::format("{} on {}: the communicator failed earlier: {}", call.name, Name(), broken_->message));
}

auto NcclCommunicator::Ready(const Call& call) -> llvm::Error {
  if (auto e = Usable(call)) return e;
  if (Known(call.type)) return llvm::Error::success();
  return MakeError(
      CommErrc::kInvalidArgument,
      fmt::format("{}: data type {} is neither fp32 ({}) nor bf16 ({})", call.name, static_cast<int>(call.type),
                  static_cast<int>(DataType::kF32), static_cast<int>(DataType::kBF16)));
}

auto NcclCommunicator::CheckBuffer(const Call& call, const void* p, std::string_view role) -> llvm::Error {
  if (call.count == 0) return llvm::Error::success();  // NCCL reads nothing
  auto refuse = [&](std::string why) {
    return MakeError(CommErrc::kInvalidArgument, fmt::format("{} on {}: the {} buffer {}; NcclCommunicator takes "
                                                             "device pointers (cudaMalloc) on CUDA device {}",
                                                             Describe(call), Name(), role, why, o_.device));
  };
  if (p == nullptr) return refuse("is null");
  cudaPointerAttributes a{};
  if (cudaError_t e = cudaPointerGetAttributes(&a, p); e != cudaSuccess) {
    (void)cudaGetLastError();
    return refuse(fmt::format("at {} is not CUDA memory ({})", p, CudaText(e)));
  }
  if (a.type == cudaMemoryTypeManaged) return llvm::Error::success();
  if (a.type != cudaMemoryTypeDevice) return refuse(fmt::format("at {} is host memory", p));
  if (a.device != o_.device) return refuse(fmt::format("at {} is on CUDA device {}", p, a.device));
  return llvm::Error::success();
}

auto NcclCommunicator::CheckPeer(const Call& call, int peer, std::string_view role, bool may_be_self) -> llvm::Error {
  if (peer >= 0 && peer < o_.size && (may_be_self || peer != o_.rank)) return llvm::Error::success();
  return MakeError(CommErrc::kInvalidArgument,
                   fmt::format("{}: the {} must be {} rank of the {} in communicator '{}', not {}", call.name, role,
                               may_be_self ? "a" : "another", o_.size, o_.id, peer));
}

auto NcclCommunicator::AllReduce(void* data, size_t count, DataType type, ReduceOp op) -> llvm::Error {
  const Call call{.name = "AllReduce", .count = count, .type = type};
  if (auto e = Ready(call)) return e;
  if (!Known(op)) return MakeError(CommErrc::kInvalidArgument, fmt::format("AllReduce: unknown ReduceOp {}", int(op)));
  if (auto e = CheckBuffer(call, data, "data")) return e;
  return Run(call, [&] { return ncclAllReduce(data, data, count, NcclType(type), NcclOp(op), comm_, stream_); });
}

auto NcclCommunicator::ReduceScatter(const void* in, void* out, size_t count_per_rank, DataType type, ReduceOp op)
    -> llvm::Error {
  const Call call{.name = "ReduceScatter", .count = count_per_rank, .type = type};
  if (auto e = Ready(call)) return e;
  if (!Known(op)) {
    return MakeError(CommErrc::kInvalidArgument, fmt::format("ReduceScatter: unknown ReduceOp {}", int(op)));
  }
  if (auto e = CheckBuffer(call, in, "input")) return e;
  if (auto e = CheckBuffer(call, out, "output")) return e;
  // In place when out == in + rank * count_per_rank, as the interface allows.
  return Run(call,
             [&] { return ncclReduceScatter(in, out, count_per_rank, NcclType(type), NcclOp(op), comm_, stream_); });
}

auto NcclCommunicator::AllGather(const void* in, void* out, size_t count_per_rank, DataType type) -> llvm::Error {
  const Call call{.name = "AllGather", .count = count_per_rank, .type = type};
  if (auto e = Ready(call)) return e;
  if (auto e = CheckBuffer(call, in, "input")) return e;
  if (auto e = CheckBuffer(call, out, "output")) return e;
  // In place when in == out + rank * count_per_rank, as the interface allows.
  return Run(call, [&] { return ncclAllGather(in, out, count_per_rank, NcclType(type), comm_, stream_); });
}

auto NcclCommunicator::Broadcast(void* data, size_t count, DataType type, int root) -> llvm::Error {
  const Call call{.name = "Broadcast", .count = count, .type = type};
  if (auto e = Ready(call)) return e;
  if (auto e = CheckPeer(call, root, "root", /*may_be_self=*/true)) return e;
  if (auto e = CheckBuffer(call, data, "data")) return e;
  return Run(call, [&] { return ncclBroadcast(data, data, count, NcclType(type), root, comm_, stream_); });
}

auto NcclCommunicator::Send(const void* data, size_t count, DataType type, int peer) -> llvm::Error {
  const Call call{.name = "Send", .count = count, .type = type};
  if (auto e = Ready(call)) return e;
  if (auto e = CheckPeer(call, peer, "destination")) return e;
  if (auto e = CheckBuffer(call, data, "send")) return e;
  return Run(call, [&] { return ncclSend(data, count, NcclType(type), peer, comm_, stream_); });
}

auto NcclCommunicator::Recv(void* data, size_t count, DataType type, int peer) -> llvm::Error {
  const Call call{.name = "Recv", .count = count, .type = type};
  if (auto e = Ready(call)) return e;
  if (auto e = CheckPeer(call, peer, "source")) return e;
  if (auto e = CheckBuffer(call, data, "receive")) return e;
  return Run(call, [&] { return ncclRecv(data, count, NcclType(type), peer, comm_, stream_); });
}

auto NcclCommunicator::SendRecv(const void* send, size_t send_count, int to, void* recv, size_t recv_count, int from,
                                DataType type) -> llvm::Error {
  const Call call{.name = "SendRecv", .count = send_count, .type = type};
  if (auto e = Ready(call)) return e;
  if (auto e = CheckPeer(call, to, "destination")) return e;
  if (auto e = CheckPeer(call, from, "source")) return e;
  if (auto e = CheckBuffer(call, send, "send")) return e;
  if (auto e = CheckBuffer({.name = "SendRecv", .count = recv_count, .type = type}, recv, "receive")) return e;
  return Run(call, [&] {
    // Inside one group both progress together, so rings and exchanges do not deadlock.
    if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess) return r;
    ncclResult_t r = ncclSend(send, send_count, NcclType(type), to, comm_, stream_);
    if (r == ncclSuccess) r = ncclRecv(recv, recv_count, NcclType(type), from, comm_, stream_);
    ncclResult_t end = ncclGroupEnd();  // always closes the group, even after an error
    return r != ncclSuccess ? r : end;
  });
}

auto NcclCommunicator::Barrier() -> llvm::Error {
  const Call call{.name = "Barrier"};
  if (auto e = Usable(call)) return e;
  return Run(call, [&] { return ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_); });
}

auto NcclCommunicator::Split(int color, int key) -> llvm::Expected<std::unique_ptr<Communicator>> {
  const Call call{.name = "Split"};
  if (auto e = Usable(call)) return e;
  if (color < kNoColor) {
    return MakeError(CommErrc::kInvalidArgument,
                     fmt::format("{} passed colour {} to Split; a colour is >= 0, or -1 for none", Name(), color));
  }
  const auto deadline = Clock::now() + o_.timeout;
  if (cudaError_t e = cudaSetDevice(o_.device); e != cudaSuccess) return CudaFailure(call, e, "cudaSetDevice");
  NcclOptions options = o_;
  options.id = fmt::format("{}.s{}.c{}", o_.id, splits_++, color);
  // Made first: NCCL keeps the commName pointer, and writes the child's
  // handle into child->comm_ from its own thread when the split finishes.
  std::unique_ptr<NcclCommunicator> child(new NcclCommunicator(std::move(options)));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = child->o_.id.c_str();
  ncclResult_t r = ncclCommSplit(comm_, color == kNoColor ? NCCL_SPLIT_NOCOLOR : color, key, &child->comm_, &config);
  // The parent's state says when the split has finished (the child's handle is
  // null until then); after a failure or an abort the child is abandoned too.
  child->broken_ = Failure{CommErrc::kIo, "the split did not finish"};
  if (r != ncclSuccess && r != ncclInProgress) return NcclFailure(call, r);
  if (auto e = WaitComm(comm_, call, deadline)) return e;
  if (color == kNoColor) return nullptr;
  return FinishChild(std::move(child), deadline);
}

auto NcclCommunicator::FinishChild(std::unique_ptr<NcclCommunicator> child, Clock::time_point deadline)
    -> llvm::Expected<std::unique_ptr<Communicator>> {
  const std::string where = fmt::format("{}: Split into communicator '{}'", Name(), child->o_.id);
  if (child->comm_ == nullptr) {
    return MakeError(CommErrc::kIo, where + " gave no communicator (ncclCommSplit returned a null handle)");
  }
  // The child's own init result (its handle is set even when that failed).
  if (ncclResult_t state = PollState(child->comm_, deadline); state != ncclSuccess) {
    std::string why = state == ncclInProgress
                          ? fmt::format("did not finish within {}", rendezvous::FormatSeconds(o_.timeout))
                          : "failed: " + NcclText(child->comm_, state);
    return MakeError(state == ncclInProgress ? CommErrc::kTimeout : CodeOf(state), where + " " + why);
  }
  int rank = 0, size = 0;
  if (ncclResult_t r = ncclCommUserRank(child->comm_, &rank); r != ncclSuccess) {
    return MakeError(CodeOf(r), where + ": ncclCommUserRank failed: " + NcclText(child->comm_, r));
  }
  if (ncclResult_t r = ncclCommCount(child->comm_, &size); r != ncclSuccess) {
    return MakeError(CodeOf(r), where + ": ncclCommCount failed: " + NcclText(child->comm_, r));
  }
  child->o_.rank = rank;
  child->o_.size = size;
  child->broken_.reset();
  if (auto e = child->MakeStreamAndScratch()) return e;
  return std::unique_ptr<Communicator>(std::move(child));
}

}  // namespace avf::comm
