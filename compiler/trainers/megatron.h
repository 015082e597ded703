// Megatron-LM (pinned: kMegatronVersion): what its arguments can express.
#pragma once

#include <optional>
#include <string_view>

#include "cost/shape.h"
#include "trainers/trainer.h"

namespace avf::trainers {

inline constexpr std::string_view kMegatronVersion = "core_v0.15.3";

// Where the pods find pretrain_gpt.py unless `trainer { entry = "..." }` says
// otherwise: the Megatron-LM checkout at /workspace/megatron, as in that
// release's README (docs/trainers.md).
inline constexpr std::string_view kMegatronEntry = "/workspace/megatron/pretrain_gpt.py";

auto MegatronLimit(const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit>;

// True when `flag` ("--num-layers") is an option of the pinned release
// (compiler/trainers/megatron_flags.def).
auto IsMegatronFlag(std::string_view flag) -> bool;

}  // namespace avf::trainers
