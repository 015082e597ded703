#include "plan_format/slices.h"

namespace avf::plan_format {

auto DataSliceOf(int64_t global_batch, int64_t data, int64_t d) -> Slice {
  int64_t per_rank = global_batch / data;
  return {per_rank * d, per_rank};
}

auto ZeroSliceOf(int64_t elements, int64_t data, int64_t d) -> Slice {
  int64_t share = elements / data, first = share * d;
  int64_t end = d + 1 == data ? elements : first + share;
  return {first, end - first};
}

}  // namespace avf::plan_format
