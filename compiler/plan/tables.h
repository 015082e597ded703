// The plan's tables for a chosen layout: ranks, process groups, stage
// chunks, data slices and ZeRO ownership.
#pragma once

#include "plan/plan.h"

namespace avf::plan {

// Fills plan.ranks, groups, stages, data, zero and stage_params from
// plan.job and plan.chosen.layout.
void BuildTables(Plan& plan);

}  // namespace avf::plan
