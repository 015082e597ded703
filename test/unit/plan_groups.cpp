#include "plan_groups.h"

#include "plan_format/rank_layout.h"

namespace avf::testing {

void AddRanksAndGroups(runtime::RunPlan& p, int64_t T, int64_t D, int64_t P, int64_t gpus_per_node, bool tied) {
  namespace pf = plan_format;
  pf::Axes axes{T, D, P};
  p.hardware.ranks_per_node = pf::RanksPerNode(axes.world(), gpus_per_node);
  for (int64_t r = 0; r < axes.world(); ++r) {
    pf::Coord c = pf::CoordOf(axes, r);
    pf::Place at = pf::PlaceOf(r, gpus_per_node, 0);
    p.ranks.push_back({r, at.node, at.gpu, at.leaf, c.tensor, c.data, c.pipeline});
  }
  p.groups.tensor = pf::AxisGroups(axes, pf::Axis::Tensor);
  p.groups.data = pf::AxisGroups(axes, pf::Axis::Data);
  p.groups.pipeline = pf::AxisGroups(axes, pf::Axis::Pipeline);
  if (tied) p.groups.embedding = pf::EmbeddingGroups(axes);
}

}  // namespace avf::testing
