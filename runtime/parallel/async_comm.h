// Communication that runs beside the computation, each on a thread of its own
// that alone uses its communicator (a communicator is not for two threads):
//
//  - AsyncSender: a pipeline link's sends. The schedules need buffered sends
//    (schedule.h: a blocking send in 1F1B's steady state deadlocks), so Send
//    copies the message and returns; the thread delivers messages in order.
//  - GradientReducer: the data group's gradient all-reduces (average), in
//    the order they are handed over, so one block's reduction overlaps the
//    backward of the next (ZeRO 0's buckets).
//
// A failure is kept and returned by the next Flush/Wait; the messages or
// reductions after it are dropped (the step fails anyway).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <llvm/Support/Error.h>

#include "backend/backend.h"
#include "comm/communicator.h"

namespace avf::parallel {

// Runs queued jobs in order on one thread; the base of both below.
class SerialWorker {
 public:
  SerialWorker();
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  auto operator=(const SerialWorker&) -> SerialWorker& = delete;

  void Post(std::function<llvm::Error()> job);
  // Blocks until every posted job has run; the first failure since the last Wait.
  auto Wait() -> llvm::Error;

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<llvm::Error()>> jobs_;
  bool busy_ = false, stop_ = false;
  std::string error_;
  std::thread thread_;
};

class AsyncSender {
 public:
  // `link` is a two-rank communicator; this rank sends to `peer` on it.
  // `memory`: the backend memory the messages are in when the host cannot
  // read it, else null. Each message is copied: within `memory` when the
  // link takes device memory (into buffers kept for the next messages: as
  // many as there are messages in flight at once, at most a step's sends),
  // else out to the host.
  AsyncSender(comm::Communicator* link, int peer, backend::Memory* memory = nullptr)
      : link_(link), peer_(peer), memory_(memory) {}
  ~AsyncSender();
  AsyncSender(const AsyncSender&) = delete;
  auto operator=(const AsyncSender&) -> AsyncSender& = delete;
  // Copies the message: `data` may change as soon as Send returns.
  template <comm::Element E>
  void Send(const E* data, size_t count) {
    Send(data, count, comm::kDataTypeOf<E>);
  }
  void Send(const void* data, size_t count, comm::DataType type);
  auto Flush() -> llvm::Error { return worker_.Wait(); }

 private:
  // A device buffer of `bytes` from the kept ones, or a new one.
  auto TakeBuffer(size_t bytes) -> void*;
  void KeepBuffer(size_t bytes, void* buffer);

  comm::Communicator* link_;
  int peer_;
  backend::Memory* memory_;
  std::mutex kept_mu_;
  std::multimap<size_t, void*> kept_;  // device buffers between messages, by size
  SerialWorker worker_;
};

class GradientReducer {
 public:
  // Null or a group of one: Reduce does nothing.
  explicit GradientReducer(comm::Communicator* data) : data_(data) {}
  // Averages data[0, count) over the group, in place, later (a bf16 average
  // accumulates in fp32 and rounds once).
  template <comm::Element E>
  void Reduce(E* data, size_t count) {
    Reduce(data, count, comm::kDataTypeOf<E>);
  }
  void Reduce(void* data, size_t count, comm::DataType type);
  auto Wait() -> llvm::Error { return worker_.Wait(); }
  // Ranges reduced since construction, for tests and the scaling bench.
  auto reductions() const -> int64_t { return reductions_; }

 private:
  comm::Communicator* data_;
  SerialWorker worker_;
  int64_t reductions_ = 0;
};

}  // namespace avf::parallel
