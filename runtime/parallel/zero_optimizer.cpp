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

ShardedAdamW::ShardedAdamW(backend::Memory& memory, optim::OptimizerConfig config, std::vector<OwnedSlice> slices,
                           int64_t data_rank, const std::vector<optim::ElementRun>& decayed)
    : slices_(std::move(slices)),
      data_rank_(data_rank),
      config_(config),
      decayed_(RunsWithin(decayed, mine())),
      m_(memory, static_cast<size_t>(mine().count)),
      v_(memory, static_cast<size_t>(mine().count)) {}

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

// Room for `blocks` blocks of n elements and one more, zeroed (the padding
// of the parts is reduced and sent too, then ignored).
template <typename E>
auto Blocks(backend::Kernels<E>& k, backend::Buffer<E>& scratch, size_t blocks, size_t n) -> E* {
  if (scratch.size() < (blocks + 1) * n) scratch = backend::Buffer<E>(k, (blocks + 1) * n);
  else scratch.Zero();
  return scratch.data();
}

}  // namespace

template <comm::Element E>
auto ScatterToOwners(backend::Kernels<E>& k, const E* window, int64_t first, int64_t count,
                     const std::vector<OwnedSlice>& slices, int64_t me, comm::Communicator* data, E* owned,
                     backend::Buffer<E>& scratch) -> llvm::Error {
  std::vector<OwnedSlice> parts = Parts(first, count, slices);
  int64_t widest = Widest(parts);
  const OwnedSlice& mine = parts[static_cast<size_t>(me)];
  E* into = mine.count > 0 ? owned + (mine.first - slices[static_cast<size_t>(me)].first) : owned;
  auto add = [&k, into, n = mine.count](const E* from) { k.ResidualForward(into, into, from, n); };
  if (!data || data->size() == 1) {
    add(window + (mine.first - first));
    return llvm::Error::success();
  }
  if (widest == 0) return llvm::Error::success();
  auto n = static_cast<size_t>(widest);
  E* blocks = Blocks(k, scratch, parts.size(), n);
  for (size_t d = 0; d < parts.size(); ++d) {
    CopyElements(k, blocks + d * n, window + (parts[d].first - first), parts[d].count);
  }
  E* sum = blocks + parts.size() * n;
  if (llvm::Error e = data->ReduceScatter(blocks, sum, n, comm::ReduceOp::kSum)) return e;
  add(sum);
  return llvm::Error::success();
}

template <comm::Element E>
auto GatherFromOwners(backend::Kernels<E>& k, E* window, int64_t first, int64_t count,
                      const std::vector<OwnedSlice>& slices, int64_t me, comm::Communicator* data, const E* owned,
                      backend::Buffer<E>& scratch) -> llvm::Error {
  std::vector<OwnedSlice> parts = Parts(first, count, slices);
  int64_t widest = Widest(parts);
  const OwnedSlice& mine = parts[static_cast<size_t>(me)];
  const E* from = mine.count > 0 ? owned + (mine.first - slices[static_cast<size_t>(me)].first) : owned;
  if (!data || data->size() == 1) {
    CopyElements(k, window + (mine.first - first), from, mine.count);
    return llvm::Error::success();
  }
  if (widest == 0) return llvm::Error::success();
  auto n = static_cast<size_t>(widest);
  E* blocks = Blocks(k, scratch, parts.size(), n);
  E* send = blocks + parts.size() * n;
  CopyElements(k, send, from, mine.count);
  if (llvm::Error e = data->AllGather(send, blocks, n)) return e;
  for (size_t d = 0; d < parts.size(); ++d) {
    CopyElements(k, window + (parts[d].first - first), blocks + d * n, parts[d].count);
  }
  return llvm::Error::success();
}

#define AVF_ZERO(E)                                                                                                  \
  template auto ShardedAdamW::Gather<E>(E*, comm::Communicator*)->llvm::Error;                                       \
  template auto ScatterToOwners<E>(backend::Kernels<E>&, const E*, int64_t, int64_t, const std::vector<OwnedSlice>&, \
                                   int64_t, comm::Communicator*, E*, backend::Buffer<E>&)                            \
      ->llvm::Error;                                                                                                 \
  template auto GatherFromOwners<E>(backend::Kernels<E>&, E*, int64_t, int64_t, const std::vector<OwnedSlice>&,      \
                                    int64_t, comm::Communicator*, const E*, backend::Buffer<E>&)                     \
      ->llvm::Error;

AVF_ZERO(float)
AVF_ZERO(comm::Bf16)

}  // namespace avf::parallel
