// `checkpoint { async = true }`: a checkpoint step holds training only while
// the rank copies its state to host memory (and, when the previous write is
// still running, until it ends); a background thread writes and fsyncs the
// rank's files. After each step the ranks agree (a small all-reduce, only
// while a write is pending) whether every rank's write is done; once it is,
// rank 0 commits the step. A crash at any moment leaves the step
// uncommitted, so the previous committed checkpoint is the one resumed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include <llvm/Support/Error.h>

#include "parallel/engine.h"
#include "train/checkpointing.h"

namespace avf::train {

class AsyncCheckpoints {
 public:
  // `commit(step)` is what rank 0 runs once every rank has written `step`.
  AsyncCheckpoints(const CheckpointContext& context, parallel::Engine& engine,
                   std::function<llvm::Error(int64_t step)> commit)
      : context_(context), engine_(engine), commit_(std::move(commit)) {}
  ~AsyncCheckpoints();
  AsyncCheckpoints(const AsyncCheckpoints&) = delete;
  auto operator=(const AsyncCheckpoints&) -> AsyncCheckpoints& = delete;

  // After every step, on every rank: commits the pending write once every
  // rank has finished it. A collective while a write is pending.
  auto Poll() -> llvm::Error;
  // At a checkpoint step: finishes the pending write, snapshots the state
  // and starts writing it. The seconds training was held.
  auto Start(int64_t step) -> llvm::Expected<double>;
  // Until nothing is pending: the last write committed.
  auto Finish() -> llvm::Error;

 private:
  // The ranks' agreement on the pending write: committed (true), still
  // running somewhere (false), or an error (a rank's write failed).
  auto Agree(bool wait) -> llvm::Expected<bool>;
  void Join();

  const CheckpointContext& context_;
  parallel::Engine& engine_;
  std::function<llvm::Error(int64_t)> commit_;
  std::optional<int64_t> pending_;
  std::thread writer_;
  std::atomic<bool> done_{false};
  std::string error_;    // the writer's, read after done_
  SavedState snapshot_;  // written by the writer; taken again only once it is done
};

}  // namespace avf::train
