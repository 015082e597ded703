#include "parallel/async_comm.h"

#include <memory>

namespace avf::parallel {

SerialWorker::SerialWorker() : thread_([this] { Loop(); }) {}

SerialWorker::~SerialWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void SerialWorker::Post(std::function<llvm::Error()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

auto SerialWorker::Wait() -> llvm::Error {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return jobs_.empty() && !busy_; });
  if (error_.empty()) return llvm::Error::success();
  std::string message;
  message.swap(error_);
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

void SerialWorker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and nothing left
    std::function<llvm::Error()> job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    bool failed = !error_.empty();
    lock.unlock();
    // After a failure the rest is dropped: the step fails anyway.
    std::string message;
    if (!failed) {
      if (llvm::Error e = job()) message = llvm::toString(std::move(e));
    }
    lock.lock();
    if (!message.empty() && error_.empty()) error_ = std::move(message);
    busy_ = false;
    if (jobs_.empty()) idle_.notify_all();
  }
}

AsyncSender::~AsyncSender() {
  llvm::consumeError(worker_.Wait());
  for (auto& [bytes, buffer] : kept_) memory_->Free(buffer);
}

auto AsyncSender::TakeBuffer(size_t bytes) -> void* {
  {
    std::lock_guard lock(kept_mu_);
    if (auto it = kept_.find(bytes); it != kept_.end()) {
      void* buffer = it->second;
      kept_.erase(it);
      return buffer;
    }
  }
  return memory_->Allocate(bytes);
}

void AsyncSender::KeepBuffer(size_t bytes, void* buffer) {
  std::lock_guard lock(kept_mu_);
  kept_.emplace(bytes, buffer);
}

void AsyncSender::Send(const void* data, size_t count, comm::DataType type) {
  size_t size = count * comm::ElementBytes(type);
  if (memory_ && link_->device_memory() && size > 0) {
    void* copy = TakeBuffer(size);
    memory_->Copy2D(copy, 0, data, 0, size, 1);
    memory_->Synchronize();  // the link's stream does not wait for the backend's
    worker_.Post([this, copy, count, type, size]() -> llvm::Error {
      llvm::Error e = link_->Send(copy, count, type, peer_);
      KeepBuffer(size, copy);
      return e;
    });
    return;
  }
  std::shared_ptr<std::vector<uint8_t>> message;
  if (memory_) {
    message = std::make_shared<std::vector<uint8_t>>(size);
    if (size > 0) memory_->CopyToHost(message->data(), data, size);
  } else {
    const auto* bytes = static_cast<const uint8_t*>(data);
    message = std::make_shared<std::vector<uint8_t>>(bytes, bytes + size);
  }
  worker_.Post(
      [this, message, count, type]() -> llvm::Error { return link_->Send(message->data(), count, type, peer_); });
}

void GradientReducer::Reduce(void* data, size_t count, comm::DataType type) {
  if (!data_ || data_->size() == 1 || count == 0) return;
  ++reductions_;
  worker_.Post(
      [this, data, count, type]() -> llvm::Error { return data_->AllReduce(data, count, type, comm::ReduceOp::kAvg); });
}

}  // namespace avf::parallel
