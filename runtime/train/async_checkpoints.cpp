#include "train/async_checkpoints.h"

#include <chrono>

#include <fmt/format.h>

#include "checkpoint/store.h"

namespace avf::train {

namespace {

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

using Clock = std::chrono::steady_clock;

}  // namespace

AsyncCheckpoints::~AsyncCheckpoints() { Join(); }

void AsyncCheckpoints::Join() {
  if (writer_.joinable()) writer_.join();
}

auto AsyncCheckpoints::Agree(bool wait) -> llvm::Expected<bool> {
  if (wait) Join();
  bool done = done_.load();
  float state[2] = {done ? 1.0f : 0.0f, done && !error_.empty() ? 1.0f : 0.0f};
  if (llvm::Error e = engine_.SumOverWorld(state, 2)) return e;
  if (state[1] > 0) {
    int64_t step = *pending_;
    pending_.reset();
    if (!error_.empty()) return Fail(error_);
    return Fail(fmt::format("another rank could not write its part of the checkpoint of step {}", step));
  }
  if (state[0] < static_cast<float>(context_.world)) return false;
  Join();
  int64_t step = *pending_;
  pending_.reset();
  if (context_.rank == 0) {
    if (llvm::Error e = commit_(step)) return e;
  }
  return true;
}

auto AsyncCheckpoints::Poll() -> llvm::Error {
  if (!pending_) return llvm::Error::success();
  llvm::Expected<bool> committed = Agree(/*wait=*/false);
  return committed ? llvm::Error::success() : committed.takeError();
}

auto AsyncCheckpoints::Finish() -> llvm::Error {
  if (!pending_) return llvm::Error::success();
  llvm::Expected<bool> committed = Agree(/*wait=*/true);
  return committed ? llvm::Error::success() : committed.takeError();
}

auto AsyncCheckpoints::Start(int64_t step) -> llvm::Expected<double> {
  Clock::time_point start = Clock::now();
  if (llvm::Error e = Finish()) return e;
  if (llvm::Error e = Snapshot(context_, engine_, snapshot_)) return e;
  pending_ = step;
  done_ = false;
  error_.clear();
  writer_ = std::thread([this, step] {
    if (llvm::Error e = WriteSnapshot(context_, snapshot_, step)) error_ = llvm::toString(std::move(e));
    done_ = true;
  });
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace avf::train
