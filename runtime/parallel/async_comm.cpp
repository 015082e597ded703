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

void AsyncSender::Send(const float* data, size_t count) {
  auto message = std::make_shared<std::vector<float>>(data, data + count);
  worker_.Post([this, message]() -> llvm::Error { return link_->Send(message->data(), message->size(), peer_); });
}

void GradientReducer::Reduce(float* data, size_t count) {
  if (!data_ || data_->size() == 1 || count == 0) return;
  ++reductions_;
  worker_.Post([this, data, count]() -> llvm::Error { return data_->AllReduce(data, count, comm::ReduceOp::kAvg); });
}

}  // namespace avf::parallel
