// A communicator over buffers the host cannot read (a GPU's memory, with
// ranks that share one GPU over TCP, or any backend whose memory is not
// host-visible): each call copies the buffers it reads from the backend into
// host staging memory, runs the wrapped host communicator there, and copies
// what it wrote back. Like every communicator it is used by one thread; the
// staging memory grows to the largest message and stays.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "comm/communicator.h"

namespace avf::parallel {

class StagedCommunicator final : public comm::Communicator {
 public:
  // `inner` and `memory` outlive this communicator.
  StagedCommunicator(comm::Communicator& inner, backend::Memory& memory) : inner_(&inner), memory_(&memory) {}
  // Owns `inner` (a communicator split from a staged one).
  StagedCommunicator(std::unique_ptr<comm::Communicator> inner, backend::Memory& memory)
      : owned_(std::move(inner)), inner_(owned_.get()), memory_(&memory) {}

  auto rank() const -> int override { return inner_->rank(); }
  auto size() const -> int override { return inner_->size(); }
  auto AllReduce(void* data, size_t count, comm::DataType type, comm::ReduceOp op) -> llvm::Error override;
  auto ReduceScatter(const void* in, void* out, size_t count_per_rank, comm::DataType type, comm::ReduceOp op)
      -> llvm::Error override;
  auto AllGather(const void* in, void* out, size_t count_per_rank, comm::DataType type) -> llvm::Error override;
  auto Broadcast(void* data, size_t count, comm::DataType type, int root) -> llvm::Error override;
  auto Send(const void* data, size_t count, comm::DataType type, int peer) -> llvm::Error override;
  auto Recv(void* data, size_t count, comm::DataType type, int peer) -> llvm::Error override;
  auto SendRecv(const void* send, size_t send_count, int to, void* recv, size_t recv_count, int from,
                comm::DataType type) -> llvm::Error override;
  auto Barrier() -> llvm::Error override { return inner_->Barrier(); }
  auto Split(int color, int key) -> llvm::Expected<std::unique_ptr<comm::Communicator>> override;

 private:
  // Host staging for `bytes` in buffer `which` (0 or 1: a call's input and output).
  auto Stage(int which, size_t bytes) -> uint8_t*;
  // Stage buffer `which`, filled from the backend's `from`.
  auto In(int which, const void* from, size_t bytes) -> uint8_t*;

  std::unique_ptr<comm::Communicator> owned_;
  comm::Communicator* inner_;
  backend::Memory* memory_;
  std::vector<uint8_t> stage_[2];
};

// A communicator over device memory (NCCL) that first waits for the work
// the backend has queued: its collectives run on a stream of their own that
// does not wait for the backend's kernels. Each call returns with its result
// in place, so later kernels see it.
class SyncedCommunicator final : public comm::Communicator {
 public:
  SyncedCommunicator(comm::Communicator& inner, backend::Memory& memory) : inner_(&inner), memory_(&memory) {}
  SyncedCommunicator(std::unique_ptr<comm::Communicator> inner, backend::Memory& memory)
      : owned_(std::move(inner)), inner_(owned_.get()), memory_(&memory) {}

  auto rank() const -> int override { return inner_->rank(); }
  auto size() const -> int override { return inner_->size(); }
  auto device_memory() const -> bool override { return true; }
  auto AllReduce(void* data, size_t count, comm::DataType type, comm::ReduceOp op) -> llvm::Error override {
    return memory_->Synchronize(), inner_->AllReduce(data, count, type, op);
  }
  auto ReduceScatter(const void* in, void* out, size_t count_per_rank, comm::DataType type, comm::ReduceOp op)
      -> llvm::Error override {
    return memory_->Synchronize(), inner_->ReduceScatter(in, out, count_per_rank, type, op);
  }
  auto AllGather(const void* in, void* out, size_t count_per_rank, comm::DataType type) -> llvm::Error override {
    return memory_->Synchronize(), inner_->AllGather(in, out, count_per_rank, type);
  }
  auto Broadcast(void* data, size_t count, comm::DataType type, int root) -> llvm::Error override {
    return memory_->Synchronize(), inner_->Broadcast(data, count, type, root);
  }
  auto Send(const void* data, size_t count, comm::DataType type, int peer) -> llvm::Error override {
    return memory_->Synchronize(), inner_->Send(data, count, type, peer);
  }
  auto Recv(void* data, size_t count, comm::DataType type, int peer) -> llvm::Error override {
    return memory_->Synchronize(), inner_->Recv(data, count, type, peer);
  }
  auto SendRecv(const void* send, size_t send_count, int to, void* recv, size_t recv_count, int from,
                comm::DataType type) -> llvm::Error override {
    return memory_->Synchronize(), inner_->SendRecv(send, send_count, to, recv, recv_count, from, type);
  }
  auto Barrier() -> llvm::Error override { return inner_->Barrier(); }
  auto Split(int color, int key) -> llvm::Expected<std::unique_ptr<comm::Communicator>> override;

 private:
  std::unique_ptr<comm::Communicator> owned_;
  comm::Communicator* inner_;
  backend::Memory* memory_;
};

// `inner` made fit for buffers in `memory` (not host-visible): synced when it
// takes device memory, staged through the host when it does not.
auto ForBackend(comm::Communicator& inner, backend::Memory& memory) -> std::unique_ptr<comm::Communicator>;

}  // namespace avf::parallel
