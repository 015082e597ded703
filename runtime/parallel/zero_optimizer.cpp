#include "parallel/zero_optimizer.h"

#include <algorithm>

namespace avf::parallel {

ShardedAdamW::ShardedAdamW(optim::OptimizerConfig config, std::vector<OwnedSlice> slices, int64_t data_rank,
                           const std::vector<bool>& decay)
    : slices_(std::move(slices)),
      data_rank_(data_rank),
      decay_(decay.begin() + mine().first, decay.begin() + mine().first + mine().count),
      adam_(config, mine().count) {}

auto ShardedAdamW::Step(float* params, const float* grads, double grad_norm, comm::Communicator* data) -> llvm::Error {
  Update(params + mine().first, grads + mine().first, grad_norm);
  return Gather(params, data);
}

void ShardedAdamW::Update(float* params_slice, const float* grads_slice, double grad_norm) {
  adam_.Step(params_slice, grads_slice, decay_, grad_norm);
}

auto ShardedAdamW::Gather(float* params, comm::Communicator* data) -> llvm::Error {
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

namespace {

// The part of [first, first + count) each owner's slice covers (maybe empty).
auto Parts(int64_t first, int64_t count, const std::vector<OwnedSlice>& slices) -> std::vector<OwnedSlice> {
  std::vector<OwnedSlice> parts;
  for (const OwnedSlice& s : slices) {
    int64_t lo = std::max(first, s.first), hi = std::min(first + count, s.first + s.count);
    parts.push_back({lo, std::max<int64_t>(0, hi - lo)});
  }
  return parts;
}

auto Widest(const std::vector<OwnedSlice>& parts) -> int64_t {
  int64_t widest = 0;
  for (const OwnedSlice& p : parts) widest = std::max(widest, p.count);
  return widest;
}

}  // namespace

auto ScatterToOwners(const float* window, int64_t first, int64_t count, const std::vector<OwnedSlice>& slices,
                     int64_t me, comm::Communicator* data, float* owned, std::vector<float>& scratch) -> llvm::Error {
  std::vector<OwnedSlice> parts = Parts(first, count, slices);
  int64_t widest = Widest(parts);
  const OwnedSlice& mine = parts[static_cast<size_t>(me)];
  float* into = mine.count > 0 ? owned + (mine.first - slices[static_cast<size_t>(me)].first) : owned;
  if (!data || data->size() == 1) {
    for (int64_t i = 0; i < mine.count; ++i) into[i] += window[mine.first - first + i];
    return llvm::Error::success();
  }
  if (widest == 0) return llvm::Error::success();
  auto n = static_cast<size_t>(widest);
  scratch.assign(parts.size() * n + n, 0.0f);
  for (size_t d = 0; d < parts.size(); ++d) {
    std::copy_n(window + (parts[d].first - first), parts[d].count, scratch.begin() + static_cast<int64_t>(d * n));
  }
  float* sum = scratch.data() + parts.size() * n;
  if (llvm::Error e = data->ReduceScatter(scratch.data(), sum, n, comm::ReduceOp::kSum)) return e;
  for (int64_t i = 0; i < mine.count; ++i) into[i] += sum[i];
  return llvm::Error::success();
}

auto GatherFromOwners(float* window, int64_t first, int64_t count, const std::vector<OwnedSlice>& slices, int64_t me,
                      comm::Communicator* data, const float* owned, std::vector<float>& scratch) -> llvm::Error {
  std::vector<OwnedSlice> parts = Parts(first, count, slices);
  int64_t widest = Widest(parts);
  const OwnedSlice& mine = parts[static_cast<size_t>(me)];
  const float* from = mine.count > 0 ? owned + (mine.first - slices[static_cast<size_t>(me)].first) : owned;
  if (!data || data->size() == 1) {
    std::copy_n(from, mine.count, window + (mine.first - first));
    return llvm::Error::success();
  }
  if (widest == 0) return llvm::Error::success();
  auto n = static_cast<size_t>(widest);
  scratch.assign(parts.size() * n + n, 0.0f);
  float* send = scratch.data() + parts.size() * n;
  std::copy_n(from, mine.count, send);
  if (llvm::Error e = data->AllGather(send, scratch.data(), n)) return e;
  for (size_t d = 0; d < parts.size(); ++d) {
    std::copy_n(scratch.begin() + static_cast<int64_t>(d * n), parts[d].count, window + (parts[d].first - first));
  }
  return llvm::Error::success();
}

}  // namespace avf::parallel
