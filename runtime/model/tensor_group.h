// The tensor-parallel collectives the model's layers call between their
// shards (Megatron's f and g operators), over the host-visible memory of the
// CPU backend. A null communicator is a group of one, where every call does
// nothing. Layers cannot return errors mid-step, so the first failure sticks:
// later calls do nothing and the model's owner collects it with TakeError()
// after each forward or backward.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <llvm/Support/Error.h>

#include "comm/communicator.h"

namespace avf::model {

class TensorGroup {
 public:
  explicit TensorGroup(comm::Communicator* comm = nullptr) : comm_(comm) {}

  auto size() const -> int64_t { return comm_ ? comm_->size() : 1; }
  auto rank() const -> int64_t { return comm_ ? comm_->rank() : 0; }

  // Sum over the group, in place (a bf16 sum accumulates in fp32, comm/communicator.h).
  template <typename E>
  void AllReduce(E* data, int64_t count) {
    if constexpr (comm::Element<E>) {
      if (Active())
        Keep(Timed([&] { return comm_->AllReduce(data, static_cast<size_t>(count), comm::ReduceOp::kSum); }));
    } else {
      RefuseWide();
    }
  }
  // out = size() blocks of per_rank, rank r's `in` in block r.
  template <typename E>
  void AllGather(const E* in, E* out, int64_t per_rank) {
    if constexpr (comm::Element<E>) {
      if (Active()) Keep(Timed([&] { return comm_->AllGather(in, out, static_cast<size_t>(per_rank)); }));
    } else {
      RefuseWide();
    }
  }
  // out = the group's sum of block rank() of `in` (size() blocks of per_rank).
  template <typename E>
  void ReduceScatter(const E* in, E* out, int64_t per_rank) {
    if constexpr (comm::Element<E>) {
      if (Active()) {
        Keep(Timed([&] { return comm_->ReduceScatter(in, out, static_cast<size_t>(per_rank), comm::ReduceOp::kSum); }));
      }
    } else {
      RefuseWide();
    }
  }
  // Seconds spent in the collectives since the last call (the scaling bench's
  // tensor-parallel communication time).
  auto TakeSeconds() -> double {
    double s = seconds_;
    seconds_ = 0;
    return s;
  }

  auto failed() const -> bool { return !error_.empty(); }
  auto TakeError() -> llvm::Error {
    if (error_.empty()) return llvm::Error::success();
    std::string message;
    message.swap(error_);
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
  }

 private:
  auto Active() const -> bool { return comm_ && comm_->size() > 1 && !failed(); }
  // The fp64 of the gradient checks has no wire type: a group of one only.
  void RefuseWide() {
    if (Active()) error_ = "tensor parallelism runs in fp32 and bf16 only";
  }
  template <typename F>
  auto Timed(F f) -> llvm::Error {
    auto start = std::chrono::steady_clock::now();
    llvm::Error e = f();
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return e;
  }
  void Keep(llvm::Error e) {
    if (e) error_ = llvm::toString(std::move(e));
  }

  comm::Communicator* comm_;
  std::string error_;
  double seconds_ = 0;
};

}  // namespace avf::model
