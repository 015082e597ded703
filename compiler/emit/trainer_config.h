// The configuration file another trainer reads (trainer { kind = ... }): the
// plan translated for torchtitan or Megatron-LM, as the training pods mount
// it beside plan.json (docs/trainers.md).
#pragma once

#include <string>
#include <string_view>

#include "deploy/trainer_paths.h"
#include "plan/plan.h"

namespace avf::emit {

// The file's name: torchtitan.toml, megatron.args; "" for avf-run.
auto TrainerConfigName(check::TrainerKind kind) -> std::string_view;

// torchtitan's TOML job config, or Megatron-LM's arguments one per line (a
// value with spaces stays one line); "" for avf-run.
auto TrainerConfigText(const plan::Plan& plan, const deploy::TrainerPaths& paths) -> std::string;

}  // namespace avf::emit
