// The optimizer step of one rank under every ZeRO stage (docs/plan-format.md
// #zero): AdamW on the elements this data rank owns — every element at stage
// 0; from stage 1 its plan slice, with moments for that slice only. At stages
// 1 and 2 each owner then broadcasts its slice of the updated parameters over
// the data group, so every data rank holds the whole shard again; at stage 3
// the parameters stay sharded. Also the data group's moves of one segment of
// the flat buffer between the owners of its elements (ZeRO 2 and 3).
#pragma once

#include <cstdint>
#include <vector>

#include <llvm/Support/Error.h>

#include "backend/backend.h"
#include "backend/buffer.h"
#include "comm/communicator.h"
#include "optim/optimizer.h"

namespace avf::parallel {

// Elements [first, first + count) of the flat buffer that one data rank
// owns (or that a rank counts in the norm): the optimizer's run type.
using OwnedSlice = optim::ElementRun;

// The parts of `runs` inside `slice`, relative to the slice's first element.
auto RunsWithin(const std::vector<OwnedSlice>& runs, const OwnedSlice& slice) -> std::vector<OwnedSlice>;

class ShardedAdamW {
 public:
  // `slices` has one entry per data rank, covering the buffer in order (one
  // entry for the whole buffer at stage 0); `decayed` are the runs of the
  // whole buffer that weight decay applies to (DecayedRuns). The moments
  // live in `memory` (the model's backend), zeroed.
  ShardedAdamW(backend::Memory& memory, optim::OptimizerConfig config, std::vector<OwnedSlice> slices,
               int64_t data_rank, const std::vector<optim::ElementRun>& decayed);

  // One update of this rank's slice: `params_slice` its fp32 parameters (in
  // bf16 training, the master), `grads_slice` its gradients (T); `publish`,
  // when not null, gets the updated parameters rounded to T. `grad_norm` is
  // the norm of the whole model's gradient (every rank clips alike).
  template <typename T>
  void Update(backend::Kernels<T>& k, float* params_slice, const T* grads_slice, double grad_norm, T* publish) {
    optim::ElementScalars s = optim::ElementScalarsOf(config_, optim::ScalarsOf(config_, step_, grad_norm));
    ++step_;
    k.AdamW(params_slice, grads_slice, m_.data(), v_.data(), mine().count, decayed_, s, publish);
  }
  // Broadcasts every owner's slice of the parameters over the data group
  // (null: one data rank), fp32 or bf16, in the backend's memory.
  template <comm::Element E>
  auto Gather(E* params, comm::Communicator* data) -> llvm::Error;
  auto slices() const -> const std::vector<OwnedSlice>& { return slices_; }
  auto mine() const -> const OwnedSlice& { return slices_[static_cast<size_t>(data_rank_)]; }
  auto config() const -> const optim::OptimizerConfig& { return config_; }
  auto step() const -> int64_t { return step_; }
  void set_step(int64_t step) { step_ = step; }
  // AdamW's first and second moments of mine(), in the backend's memory.
  auto m() -> backend::Buffer<float>& { return m_; }
  auto v() -> backend::Buffer<float>& { return v_; }

 private:
  std::vector<OwnedSlice> slices_;
  int64_t data_rank_;
  optim::OptimizerConfig config_;
  std::vector<optim::ElementRun> decayed_;  // within mine()
  backend::Buffer<float> m_, v_;
  int64_t step_ = 0;
};

// Adds the data group's sum of `window` — elements [first, first + count) of
// the flat buffer — to `owned`, this rank's slice (`slices[me]`), each rank
// getting the part its slice covers: a reduce-scatter over blocks padded to
// the largest part. Every buffer is in k's memory; `scratch` grows as needed
// and is reused between calls. A bf16 window is reduced with fp32
// accumulation and added to `owned` with one rounding.
template <comm::Element E>
auto ScatterToOwners(backend::Kernels<E>& k, const E* window, int64_t first, int64_t count,
                     const std::vector<OwnedSlice>& slices, int64_t me, comm::Communicator* data, E* owned,
                     backend::Buffer<E>& scratch) -> llvm::Error;
// Fills `window` (elements [first, first + count)) from the owners' slices:
// an all-gather of the parts, padded to the largest.
template <comm::Element E>
auto GatherFromOwners(backend::Kernels<E>& k, E* window, int64_t first, int64_t count,
                      const std::vector<OwnedSlice>& slices, int64_t me, comm::Communicator* data, const E* owned,
                      backend::Buffer<E>& scratch) -> llvm::Error;

// n elements from src to dst, both in k's memory.
template <typename E>
void CopyElements(backend::Memory& k, E* dst, const E* src, int64_t n) {
  if (n > 0) k.Copy2D(dst, 0, src, 0, static_cast<size_t>(n) * sizeof(E), 1);
}

}  // namespace avf::parallel
