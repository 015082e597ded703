#include "plan_format/rank_layout.h"

#include <algorithm>

namespace avf::plan_format {

auto RankOf(const Axes& a, const Coord& c) -> int64_t { return c.tensor + a.tensor * (c.data + a.data * c.pipeline); }

auto CoordOf(const Axes& a, int64_t rank) -> Coord {
  return {rank % a.tensor, rank / a.tensor % a.data, rank / (a.tensor * a.data)};
}

namespace {

// index -> coordinates along `shape`, the first axis fastest.
auto Decompose(int64_t index, const std::vector<int64_t>& shape) -> std::vector<int64_t> {
  std::vector<int64_t> out;
  for (int64_t extent : shape) {
    out.push_back(index % extent);
    index /= extent;
  }
  return out;
}

auto InnerProduct(const std::vector<int64_t>& a, const std::vector<int64_t>& b) -> int64_t {
  int64_t sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

auto MaskedOrthogonalGroups(const std::vector<int64_t>& sizes, const std::vector<bool>& mask) -> std::vector<Group> {
  std::vector<int64_t> masked_shape, unmasked_shape, masked_stride, unmasked_stride;
  int64_t stride = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    (mask[i] ? masked_shape : unmasked_shape).push_back(sizes[i]);
    (mask[i] ? masked_stride : unmasked_stride).push_back(stride);
    stride *= sizes[i];
  }
  int64_t group_size = 1, groups = 1;
  for (int64_t s : masked_shape) group_size *= s;
  for (int64_t s : unmasked_shape) groups *= s;
  std::vector<Group> out(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    int64_t base = InnerProduct(Decompose(g, unmasked_shape), unmasked_stride);
    out[g].reserve(static_cast<size_t>(group_size));
    for (int64_t m = 0; m < group_size; ++m) {
      out[g].push_back(base + InnerProduct(Decompose(m, masked_shape), masked_stride));
    }
  }
  return out;
}

auto AxisGroups(const Axes& a, Axis axis) -> std::vector<Group> {
  return MaskedOrthogonalGroups({a.tensor, a.data, a.pipeline},
                                {axis == Axis::Tensor, axis == Axis::Data, axis == Axis::Pipeline});
}

auto EmbeddingGroups(const Axes& a) -> std::vector<Group> {
  std::vector<Group> out;
  if (a.pipeline < 2) return out;
  for (const Group& g : AxisGroups(a, Axis::Pipeline)) out.push_back({g.front(), g.back()});
  return out;
}

auto PlaceOf(int64_t rank, int64_t gpus_per_node, int64_t nodes_per_leaf) -> Place {
  int64_t node = rank / gpus_per_node;
  return {node, rank % gpus_per_node, nodes_per_leaf > 0 ? node / nodes_per_leaf : 0};
}

auto NodesFor(int64_t world, int64_t gpus_per_node) -> int64_t {
  return world / gpus_per_node + (world % gpus_per_node != 0);
}

auto RanksPerNode(int64_t world, int64_t gpus_per_node) -> int64_t {
  return std::max<int64_t>(std::min(world, gpus_per_node), 1);
}

}  // namespace avf::plan_format
