// torchtitan's TOML job config for a plan (the release of
// trainers::kTorchtitanVersion; mapping: docs/trainers.md). Every key it
// writes is one of that release's (compiler/trainers/torchtitan_keys.def).
#pragma once

#include <llvm/Support/raw_ostream.h>

#include "deploy/trainer_paths.h"
#include "plan/plan.h"

namespace avf::emit {

// The plan must be one torchtitan can run (trainers::TorchtitanLimit).
// Deterministic: the same plan gives the same bytes.
void WriteTorchtitanToml(const plan::Plan& plan, const deploy::TrainerPaths& paths, llvm::raw_ostream& out);

}  // namespace avf::emit
