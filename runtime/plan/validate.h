// The consistency checks of ValidatePlan, one function per rule group of
// plan-format.md's Validation section. Each reports every problem it finds
// and does not stop at the first, except where one broken count would make
// every later comparison noise.
#pragma once

#include <optional>

#include "plan/plan.h"
#include "plan/problems.h"

namespace avf::runtime {

// Divisors and extents the other checks divide by; false (reported) when a
// hand-built RunPlan has a zero or negative one.
auto CheckExtents(const RunPlan& plan, Problems& p) -> bool;

// data x tensor x pipeline = len(ranks) = training.gpus; the world size when
// it matches the rank table, so that rank-indexed checks may run.
auto CheckWorld(const RunPlan& plan, Problems& p) -> std::optional<int64_t>;

void CheckHardware(const RunPlan& plan, int64_t world, Problems& p);
void CheckRanks(const RunPlan& plan, int64_t world, Problems& p);
void CheckGroups(const RunPlan& plan, int64_t world, Problems& p);
void CheckTraining(const RunPlan& plan, Problems& p);

void CheckStages(const RunPlan& plan, Problems& p);
void CheckDataSlices(const RunPlan& plan, Problems& p);
void CheckValidation(const RunPlan& plan, Problems& p);
void CheckZeroSlices(const RunPlan& plan, Problems& p);
void CheckCheckpoint(const RunPlan& plan, Problems& p);
void CheckElastic(const RunPlan& plan, Problems& p);

// "[0, 4, 8, 12]", the first 8 members then "...".
auto GroupText(const RankGroup& group) -> std::string;

}  // namespace avf::runtime
