// A version-3 plan lists no ranks, groups, data slices or ZeRO slices: they
// follow from the layout by the rules of plan_format/rank_layout.h and
// plan_format/slices.h, the rules the compiler builds its own tables with.
// The reader derives them here, so that everything after it sees the tables
// a version-2 plan lists.
#pragma once

#include "plan/plan.h"
#include "plan/problems.h"

namespace avf::runtime {

// Fills plan.ranks, groups, data.slices and zero.slices, once the rules'
// parameters are consistent: data x tensor x pipeline = training.gpus, at
// most kMaxRanks; the global batch a multiple of data; with ZeRO, one
// stage_parameters entry per stage. Otherwise each problem is reported at
// the key that holds the parameter, and the tables stay empty.
void DeriveTables(RunPlan& plan, Problems& p);

}  // namespace avf::runtime
