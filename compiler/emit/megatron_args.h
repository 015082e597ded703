// Megatron-LM's command-line arguments for a plan (the release of
// trainers::kMegatronVersion; mapping: docs/trainers.md). Every flag is one
// of that release's (compiler/trainers/megatron_flags.def).
#pragma once

#include <string>
#include <vector>

#include "deploy/trainer_paths.h"
#include "plan/plan.h"

namespace avf::emit {

// The plan must be one Megatron-LM can run (trainers::MegatronLimit).
// Flags and values as separate words, in a fixed order.
auto MegatronArguments(const plan::Plan& plan, const deploy::TrainerPaths& paths) -> std::vector<std::string>;

}  // namespace avf::emit
