#include "parallel/zero_optimizer.h"

#include <algorithm>

#include "backend/element.h"

namespace avf::parallel {

auto RunsWithin(const std::vector<OwnedSlice>& runs, const OwnedSlice& slice) -> std::vector<OwnedSlice> {
  std::vector<OwnedSlice> within;
  for (const OwnedSlice& r : runs) {
    int64_t lo = std::max(r.first, slice.first), hi = std::min(r.first + r.count, slice.first + slice.count);
    if (lo < hi) within.push_back({lo - slice.first, hi - lo});
  }
  return within;
}

ShardedAdamW::ShardedAdamW(optim::OptimizerConfig config, std::vector<OwnedSlice> slices, int64_t data_rank,
                           const std::vector<optim::ElementRun>& decayed)
    : slices_(std::move(slices)), data_rank_(data_rank), adam_(config, mine().count, RunsWithin(decayed, mine())) {}

auto ShardedAdamW::Step(float* params, const float* grads, double grad_norm, comm::Communicator* data) -> llvm::Error {
  Update(params + mine().first, grads + mine().first, grad_norm);
  return Gather(params, data);
}

template <comm::Element E>
auto ShardedAdamW::Gather(E* params, comm::Communicator* data) -> llvm::Error {
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

// Sums of squares of fixed blocks, added in block order afterwards: the
// same result however many threads computed the blocks.
template <comm::Element E>
auto SquaredNorm(const E* grads, const std::vector<OwnedSlice>& counted) -> double {
  constexpr int64_t kBlock = 1 << 16;
  double sum = 0;
  for (const OwnedSlice& r : counted) {
    int64_t blocks = (r.count + kBlock - 1) / kBlock;
    std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (blocks > 16)
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t first = r.first + b * kBlock, end = std::min(r.first + r.count, first + kBlock);
      double block = 0;
      for (int64_t i = first; i < end; ++i) {
        double g = backend::Widen(grads[i]);
        block += g * g;
      }
      partial[static_cast<size_t>(b)] = block;
    }
    for (double p : partial) sum += p;
  }
  return sum;
}

template <comm::Element E>
auto ScatterToOwners(const E* window, int64_t first, int64_t count, const std::vector<OwnedSlice>& slices, int64_t me,
                     comm::Communicator* data, E* owned, std::vector<E>& scratch) -> llvm::Error {
  std::vector<OwnedSlice> parts = Parts(first, count, slices);
  int64_t widest = Widest(parts);
  const OwnedSlice& mine = parts[static_cast<size_t>(me)];
  E* into = mine.count > 0 ? owned + (mine.first - slices[static_cast<size_t>(me)].first) : owned;
  auto add = [into, n = mine.count](const E* from) {
    for (int64_t i = 0; i < n; ++i) into[i] = backend::Narrow<E>(backend::Widen(into[i]) + backend::Widen(from[i]));
  };
  if (!data || data->size() == 1) {
    add(window + (mine.first - first));
    return llvm::Error::success();
  }
  if (widest == 0) return llvm::Error::success();
  auto n = static_cast<size_t>(widest);
  scratch.assign(parts.size() * n + n, E{});
  for (size_t d = 0; d < parts.size(); ++d) {
    std::copy_n(window + (parts[d].first - first), parts[d].count, scratch.begin() + static_cast<int64_t>(d * n));
  }
  E* sum = scratch.data() + parts.size() * n;
  if (llvm::Error e = data->ReduceScatter(scratch.data(), sum, n, comm::ReduceOp::kSum)) return e;
  add(sum);
  return llvm::Error::success();
}

template <comm::Element E>
auto GatherFromOwners(E* window, int64_t first, int64_t count, const std::vector<OwnedSlice>& slices, int64_t me,
                      comm::Communicator* data, const E* owned, std::vector<E>& scratch) -> llvm::Error {
  std::vector<OwnedSlice> parts = Parts(first, count, slices);
  int64_t widest = Widest(parts);
  const OwnedSlice& mine = parts[static_cast<size_t>(me)];
  const E* from = mine.count > 0 ? owned + (mine.first - slices[static_cast<size_t>(me)].first) : owned;
  if (!data || data->size() == 1) {
    std::copy_n(from, mine.count, window + (mine.first - first));
    return llvm::Error::success();
  }
  if (widest == 0) return llvm::Error::success();
  auto n = static_cast<size_t>(widest);
  scratch.assign(parts.size() * n + n, E{});
  E* send = scratch.data() + parts.size() * n;
  std::copy_n(from, mine.count, send);
  if (llvm::Error e = data->AllGather(send, scratch.data(), n)) return e;
  for (size_t d = 0; d < parts.size(); ++d) {
    std::copy_n(scratch.begin() + static_cast<int64_t>(d * n), parts[d].count, window + (parts[d].first - first));
  }
  return llvm::Error::success();
}

#define AVF_ZERO(E)                                                                                     \
  template auto ShardedAdamW::Gather<E>(E*, comm::Communicator*)->llvm::Error;                          \
  template auto SquaredNorm<E>(const E*, const std::vector<OwnedSlice>&)->double;                       \
  template auto ScatterToOwners<E>(const E*, int64_t, int64_t, const std::vector<OwnedSlice>&, int64_t, \
                                   comm::Communicator*, E*, std::vector<E>&)                            \
      ->llvm::Error;                                                                                    \
  template auto GatherFromOwners<E>(E*, int64_t, int64_t, const std::vector<OwnedSlice>&, int64_t,      \
                                    comm::Communicator*, const E*, std::vector<E>&)                     \
      ->llvm::Error;

AVF_ZERO(float)
AVF_ZERO(comm::Bf16)

}  // namespace avf::parallel
