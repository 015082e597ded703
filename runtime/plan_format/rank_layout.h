// The rank order of plan.json, computed in one place: rank = t + T·(d + D·p)
// (tensor fastest, then data, then pipeline: plan_format::kRankOrder), ranks
// filling nodes in order, and the process groups of each axis in ring order.
// The compiler builds its rank and group tables with it, the runtime checks a
// plan's tables against it, the tests build hand-made plans with it.
#pragma once

#include <cstdint>
#include <vector>

namespace avf::plan_format {

// The extent of each parallel axis.
struct Axes {
  int64_t tensor = 1, data = 1, pipeline = 1;
  auto world() const -> int64_t { return tensor * data * pipeline; }
};

// A rank's position along each axis.
struct Coord {
  int64_t tensor = 0, data = 0, pipeline = 0;
  friend auto operator==(const Coord& a, const Coord& b) -> bool {
    return a.tensor == b.tensor && a.data == b.data && a.pipeline == b.pipeline;
  }
};

auto RankOf(const Axes& axes, const Coord& c) -> int64_t;
auto CoordOf(const Axes& axes, int64_t rank) -> Coord;

using Group = std::vector<int64_t>;

// Megatron's masked-orthogonal group generation over axes of `sizes`
// (fastest first, product = world): each group holds the ranks that differ
// only along the masked axes, in ring order (masked coordinates ascending,
// the fastest varying first); the groups are ordered by the unmasked
// coordinates, the fastest varying first. sizes and mask have one entry per
// axis; ranks are sum(coordinate_i x stride_i) with stride_i the product of
// the sizes before i.
auto MaskedOrthogonalGroups(const std::vector<int64_t>& sizes, const std::vector<bool>& mask) -> std::vector<Group>;

enum class Axis : uint8_t { Tensor, Data, Pipeline };

// The groups of one axis in plan.json's order: tensor and data groups
// pipeline-outer, pipeline groups data-outer, tensor fastest inside.
auto AxisGroups(const Axes& axes, Axis axis) -> std::vector<Group>;

// The tied-embedding groups: the pipeline groups reduced to their first and
// last stage, {(t, d, 0), (t, d, P-1)}. None unless pipeline > 1.
auto EmbeddingGroups(const Axes& axes) -> std::vector<Group>;

// Where a rank runs: node = rank / gpus_per_node, GPU = rank mod
// gpus_per_node, leaf = node / nodes_per_leaf (0 under one flat switch).
struct Place {
  int64_t node = 0, gpu = 0, leaf = 0;
};
auto PlaceOf(int64_t rank, int64_t gpus_per_node, int64_t nodes_per_leaf) -> Place;

// Nodes a world of ranks fills, and the ranks each node runs: a node's worth
// except when the whole job is smaller than one node (plan.json's
// hardware.ranks_per_node; the manifests' nprocPerNode).
auto NodesFor(int64_t world, int64_t gpus_per_node) -> int64_t;
auto RanksPerNode(int64_t world, int64_t gpus_per_node) -> int64_t;

}  // namespace avf::plan_format
