#include "plan_groups.h"

namespace avf::testing {

void AddRanksAndGroups(runtime::RunPlan& p, int64_t T, int64_t D, int64_t P, int64_t gpus_per_node, bool tied) {
  auto rank = [&](int64_t t, int64_t d, int64_t q) { return t + T * (d + D * q); };
  for (int64_t r = 0; r < T * D * P; ++r) {
    p.ranks.push_back({r, r / gpus_per_node, r % gpus_per_node, 0, r % T, r / T % D, r / (T * D)});
  }
  for (int64_t q = 0; q < P; ++q) {
    for (int64_t d = 0; d < D; ++d) {
      p.groups.tensor.emplace_back();
      for (int64_t t = 0; t < T; ++t) p.groups.tensor.back().push_back(rank(t, d, q));
    }
    for (int64_t t = 0; t < T; ++t) {
      p.groups.data.emplace_back();
      for (int64_t d = 0; d < D; ++d) p.groups.data.back().push_back(rank(t, d, q));
    }
  }
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t t = 0; t < T; ++t) {
      p.groups.pipeline.emplace_back();
      for (int64_t q = 0; q < P; ++q) p.groups.pipeline.back().push_back(rank(t, d, q));
      if (tied && P > 1) p.groups.embedding.push_back({rank(t, d, 0), rank(t, d, P - 1)});
    }
  }
}

}  // namespace avf::testing
