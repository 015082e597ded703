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
  // whole buffer that weight decay applies to (DecayedRuns).
  ShardedAdamW(optim::OptimizerConfig config, std::vector<OwnedSlice> slices, int64_t data_rank,
               const std::vector<optim::ElementRun>& decayed);

  // `grad_norm` is the norm of the whole model's gradient (every rank clips
  // by the same factor). `data` is the data group (null: one data rank).
  // Step takes the whole fp32 buffers (gradients averaged over the data
  // group); Update takes this rank's slice of the fp32 parameters (with bf16
  // training, the master copy) and of the gradients (fp32 or bf16); Gather
  // broadcasts every owner's slice of the parameters (fp32 or bf16).
  auto Step(float* params, const float* grads, double grad_norm, comm::Communicator* data) -> llvm::Error;
  template <typename G>
  void Update(float* params_slice, const G* grads_slice, double grad_norm) {
    adam_.Step(params_slice, grads_slice, grad_norm);
  }
  template <comm::Element E>
  auto Gather(E* params, comm::Communicator* data) -> llvm::Error;
  auto slices() const -> const std::vector<OwnedSlice>& { return slices_; }

  auto mine() const -> const OwnedSlice& { return slices_[static_cast<size_t>(data_rank_)]; }
  auto adam() -> optim::AdamW& { return adam_; }

 private:
  std::vector<OwnedSlice> slices_;
  int64_t data_rank_;
  optim::AdamW adam_;
};

// The elements whose squares a rank adds to the whole model's squared
// gradient norm, so that each distinct parameter counts once: tensors
// replicated across the tensor group only on tensor rank 0, a tied model's
// second copy of wte not at all, and (gradients being equal across data
// ranks) only data rank 0's.
template <comm::Element E>
auto SquaredNorm(const E* grads, const std::vector<OwnedSlice>& counted) -> double;

// Adds the data group's sum of `window` — elements [first, first + count) of
// the flat buffer — to `owned`, this rank's slice (`slices[me]`), each rank
// getting the part its slice covers: a reduce-scatter over blocks padded to
// the largest part. `scratch` is reused between calls.
// A bf16 window is reduced with fp32 accumulation and added to `owned` with
// one rounding.
template <comm::Element E>
auto ScatterToOwners(const E* window, int64_t first, int64_t count, const std::vector<OwnedSlice>& slices, int64_t me,
                     comm::Communicator* data, E* owned, std::vector<E>& scratch) -> llvm::Error;
// Fills `window` (elements [first, first + count)) from the owners' slices:
// an all-gather of the parts, padded to the largest.
template <comm::Element E>
auto GatherFromOwners(E* window, int64_t first, int64_t count, const std::vector<OwnedSlice>& slices, int64_t me,
                      comm::Communicator* data, const E* owned, std::vector<E>& scratch) -> llvm::Error;

}  // namespace avf::parallel
