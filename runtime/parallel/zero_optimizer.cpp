#include "parallel/zero_optimizer.h"

namespace avf::parallel {

ShardedAdamW::ShardedAdamW(train::OptimizerConfig config, std::vector<OwnedSlice> slices, int64_t data_rank,
                           const std::vector<bool>& decay)
    : slices_(std::move(slices)),
      data_rank_(data_rank),
      decay_(decay.begin() + mine().first, decay.begin() + mine().first + mine().count),
      adam_(config, mine().count) {}

auto ShardedAdamW::Step(float* params, const float* grads, double grad_norm, comm::Communicator* data)
    -> llvm::Error {
  const OwnedSlice& s = mine();
  adam_.Step(params + s.first, grads + s.first, decay_, grad_norm);
  if (!data || data->size() == 1 || slices_.size() == 1) return llvm::Error::success();
  for (size_t owner = 0; owner < slices_.size(); ++owner) {
    const OwnedSlice& o = slices_[owner];
    if (o.count == 0) continue;
    if (llvm::Error e = data->Broadcast(params + o.first, static_cast<size_t>(o.count), static_cast<int>(owner))) {
      return e;
    }
  }
  return llvm::Error::success();
}

auto SquaredNorm(const float* grads, const std::vector<OwnedSlice>& counted) -> double {
  double sum = 0;
  for (const OwnedSlice& r : counted) {
    for (int64_t i = r.first; i < r.first + r.count; ++i) sum += static_cast<double>(grads[i]) * grads[i];
  }
  return sum;
}

}  // namespace avf::parallel
