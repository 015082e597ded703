// What each data rank owns, computed in one place: its share of every global
// batch (plan.json's data slices) and of each pipeline stage's flat parameter
// buffer under ZeRO (the ZeRO slices). The compiler builds its tables with
// these, and the reader derives a version-3 plan's slices with them.
#pragma once

#include <cstdint>

namespace avf::plan_format {

// Elements or sequences [first, first + count).
struct Slice {
  int64_t first = 0, count = 0;
};

// Data rank d of `data` trains sequences [G/D x d, + G/D) of every global
// batch of G sequences; G is a multiple of D.
auto DataSliceOf(int64_t global_batch, int64_t data, int64_t d) -> Slice;

// Data rank d of `data` owns floor(N/D) of a stage's N elements, from
// floor(N/D) x d; the last data rank also takes the remainder.
auto ZeroSliceOf(int64_t elements, int64_t data, int64_t d) -> Slice;

}  // namespace avf::plan_format
