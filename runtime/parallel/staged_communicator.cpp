#include "parallel/staged_communicator.h"

namespace avf::parallel {

namespace {

auto Bytes(size_t count, comm::DataType type) -> size_t { return count * comm::ElementBytes(type); }

}  // namespace

auto StagedCommunicator::Stage(int which, size_t bytes) -> uint8_t* {
  std::vector<uint8_t>& s = stage_[which];
  if (s.size() < bytes) s.resize(bytes);
  return s.data();
}

auto StagedCommunicator::In(int which, const void* from, size_t bytes) -> uint8_t* {
  uint8_t* host = Stage(which, bytes);
  if (bytes > 0) memory_->CopyToHost(host, from, bytes);
  return host;
}

auto StagedCommunicator::AllReduce(void* data, size_t count, comm::DataType type, comm::ReduceOp op) -> llvm::Error {
  size_t bytes = Bytes(count, type);
  uint8_t* host = In(0, data, bytes);
  if (llvm::Error e = inner_->AllReduce(host, count, type, op)) return e;
  if (bytes > 0) memory_->CopyFromHost(data, host, bytes);
  return llvm::Error::success();
}

auto StagedCommunicator::ReduceScatter(const void* in, void* out, size_t count_per_rank, comm::DataType type,
                                       comm::ReduceOp op) -> llvm::Error {
  size_t block = Bytes(count_per_rank, type);
  uint8_t* host_in = In(0, in, block * static_cast<size_t>(size()));
  uint8_t* host_out = Stage(1, block);
  if (llvm::Error e = inner_->ReduceScatter(host_in, host_out, count_per_rank, type, op)) return e;
  if (block > 0) memory_->CopyFromHost(out, host_out, block);
  return llvm::Error::success();
}

auto StagedCommunicator::AllGather(const void* in, void* out, size_t count_per_rank, comm::DataType type)
    -> llvm::Error {
  size_t block = Bytes(count_per_rank, type), all = block * static_cast<size_t>(size());
  uint8_t* host_in = In(0, in, block);
  uint8_t* host_out = Stage(1, all);
  if (llvm::Error e = inner_->AllGather(host_in, host_out, count_per_rank, type)) return e;
  if (all > 0) memory_->CopyFromHost(out, host_out, all);
  return llvm::Error::success();
}

auto StagedCommunicator::Broadcast(void* data, size_t count, comm::DataType type, int root) -> llvm::Error {
  size_t bytes = Bytes(count, type);
  uint8_t* host = rank() == root ? In(0, data, bytes) : Stage(0, bytes);
  if (llvm::Error e = inner_->Broadcast(host, count, type, root)) return e;
  if (bytes > 0 && rank() != root) memory_->CopyFromHost(data, host, bytes);
  return llvm::Error::success();
}

auto StagedCommunicator::Send(const void* data, size_t count, comm::DataType type, int peer) -> llvm::Error {
  return inner_->Send(In(0, data, Bytes(count, type)), count, type, peer);
}

auto StagedCommunicator::Recv(void* data, size_t count, comm::DataType type, int peer) -> llvm::Error {
  size_t bytes = Bytes(count, type);
  uint8_t* host = Stage(1, bytes);
  if (llvm::Error e = inner_->Recv(host, count, type, peer)) return e;
  if (bytes > 0) memory_->CopyFromHost(data, host, bytes);
  return llvm::Error::success();
}

auto StagedCommunicator::SendRecv(const void* send, size_t send_count, int to, void* recv, size_t recv_count, int from,
                                  comm::DataType type) -> llvm::Error {
  uint8_t* host_send = In(0, send, Bytes(send_count, type));
  size_t bytes = Bytes(recv_count, type);
  uint8_t* host_recv = Stage(1, bytes);
  if (llvm::Error e = inner_->SendRecv(host_send, send_count, to, host_recv, recv_count, from, type)) return e;
  if (bytes > 0) memory_->CopyFromHost(recv, host_recv, bytes);
  return llvm::Error::success();
}

auto StagedCommunicator::Split(int color, int key) -> llvm::Expected<std::unique_ptr<comm::Communicator>> {
  auto child = inner_->Split(color, key);
  if (!child) return child.takeError();
  if (!*child) return nullptr;
  return std::make_unique<StagedCommunicator>(std::move(*child), *memory_);
}

auto SyncedCommunicator::Split(int color, int key) -> llvm::Expected<std::unique_ptr<comm::Communicator>> {
  auto child = inner_->Split(color, key);
  if (!child) return child.takeError();
  if (!*child) return nullptr;
  return std::make_unique<SyncedCommunicator>(std::move(*child), *memory_);
}

auto ForBackend(comm::Communicator& inner, backend::Memory& memory) -> std::unique_ptr<comm::Communicator> {
  if (inner.device_memory()) return std::make_unique<SyncedCommunicator>(inner, memory);
  return std::make_unique<StagedCommunicator>(inner, memory);
}

}  // namespace avf::parallel
