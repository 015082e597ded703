// The picture of a plan (`aviflowc plan --svg`, `emit svg`; docs/cli.md):
// one self-contained SVG with the ranks placed on the fat tree, one step's
// pipeline schedule from the planner's time model, and the memory per GPU of
// the chosen layout and its alternatives against the GPU's capacity.
// Large jobs are drawn by leaves and runs of like nodes, not rank by rank.
// Deterministic: the same plan gives the same bytes.
#pragma once

#include <string>

#include "plan/plan.h"

namespace avf::emit {

inline constexpr double kPictureWidth = 1280;

auto PlanSvg(const plan::Plan& plan) -> std::string;

}  // namespace avf::emit
