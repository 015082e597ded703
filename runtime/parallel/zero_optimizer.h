// The optimizer step of one rank under ZeRO stage 0 or 1 (docs/plan-format.md
// #zero): AdamW on the elements this data rank owns — every element at stage
// 0; at stage 1 its plan slice, with moments for that slice only — then each
// owner broadcasts its slice of the updated parameters over the data group,
// so every data rank holds the whole shard again. The gradients must already
// be averaged over the data group (every data rank holds the same).
#pragma once

#include <cstdint>
#include <vector>

#include <llvm/Support/Error.h>

#include "comm/communicator.h"
#include "train/optimizer.h"

namespace avf::parallel {

struct OwnedSlice {
  int64_t first = 0, count = 0;
};

class ShardedAdamW {
 public:
  // `slices` has one entry per data rank, covering the buffer in order (one
  // entry for the whole buffer at stage 0); `decay` has one flag per element
  // of the whole buffer.
  ShardedAdamW(train::OptimizerConfig config, std::vector<OwnedSlice> slices, int64_t data_rank,
               const std::vector<bool>& decay);

  // `grad_norm` is the norm of the whole model's gradient (every rank clips
  // by the same factor). `data` is the data group (null: one data rank).
  auto Step(float* params, const float* grads, double grad_norm, comm::Communicator* data) -> llvm::Error;

  auto mine() const -> const OwnedSlice& { return slices_[static_cast<size_t>(data_rank_)]; }
  auto adam() -> train::AdamW& { return adam_; }

 private:
  std::vector<OwnedSlice> slices_;
  int64_t data_rank_;
  std::vector<bool> decay_;  // of this rank's slice
  train::AdamW adam_;
};

// The elements whose squares a rank adds to the whole model's squared
// gradient norm, so that each distinct parameter counts once: tensors
// replicated across the tensor group only on tensor rank 0, a tied model's
// second copy of wte not at all, and (gradients being equal across data
// ranks) only data rank 0's.
auto SquaredNorm(const float* grads, const std::vector<OwnedSlice>& counted) -> double;

}  // namespace avf::parallel
