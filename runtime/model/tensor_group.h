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
#include <type_traits>

#include <llvm/Support/Error.h>

#include "comm/communicator.h"

namespace avf::model {

template <typename T>
class TensorGroup {
 public:
  explicit TensorGroup(comm::Communicator* comm = nullptr) : comm_(comm) {}

  auto size() const -> int64_t { return comm_ ? comm_->size() : 1; }
  auto rank() const -> int64_t { return comm_ ? comm_->rank() : 0; }

  // Sum over the group, in place.
  void AllReduce(T* data, int64_t count) {
    if (Active())
      Keep(Timed([&] { return comm_->AllReduce(Float(data), static_cast<size_t>(count), comm::ReduceOp::kSum); }));
  }
  // out = size() blocks of per_rank, rank r's `in` in block r.
  void AllGather(const T* in, T* out, int64_t per_rank) {
    if (Active()) Keep(Timed([&] { return comm_->AllGather(Float(in), Float(out), static_cast<size_t>(per_rank)); }));
  }
  // out = the group's sum of block rank() of `in` (size() blocks of per_rank).
  void ReduceScatter(const T* in, T* out, int64_t per_rank) {
    if (Active()) {
      Keep(Timed([&] {
        return comm_->ReduceScatter(Float(in), Float(out), static_cast<size_t>(per_rank), comm::ReduceOp::kSum);
      }));
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
  auto Active() -> bool {
    if (!comm_ || comm_->size() == 1 || failed()) return false;
    if constexpr (!std::is_same_v<T, float>) {
      error_ = "tensor parallelism runs in fp32 only";
      return false;
    }
    return true;
  }
  // Only reached for T = float (Active() refuses the others).
  static auto Float(T* p) -> float* { return reinterpret_cast<float*>(p); }
  static auto Float(const T* p) -> const float* { return reinterpret_cast<const float*>(p); }
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
