// The configuration file another trainer reads (trainer { kind = ... }): the
// plan translated for torchtitan or Megatron-LM, as the training pods mount
// it beside plan.json (docs/trainers.md).
#pragma once

#include <cstdint>
#include <string>

#include "deploy/trainer_paths.h"
#include "plan/plan.h"

namespace avf::emit {

// Steps between two checkpoints for a trainer that saves by steps only: the
// job's `every` in steps; a wall-clock `every` as steps at the predicted step
// time (at least as often as asked); without `every`, the last step only.
auto CheckpointEverySteps(const plan::Plan& plan) -> int64_t;

// torchtitan's TOML job config, or Megatron-LM's arguments one per line (a
// value with spaces stays one line); "" for avf-run.
auto TrainerConfigText(const plan::Plan& plan, const deploy::TrainerPaths& paths) -> std::string;

}  // namespace avf::emit
