// The Python files another trainer's pods run beside it (runtime/trainers/,
// embedded in aviflowc when it is built): torchtitan's reader of the token
// shards, and the script that shows Megatron-LM the shards as its indexed
// datasets. The plan's ConfigMap carries them to the pods (beside the batch
// script on Slurm).
#pragma once

#include <string_view>
#include <vector>

#include "check/job_spec.h"

namespace avf::trainers {

struct TrainerFile {
  std::string_view name;  // e.g. "avf_shards.py"
  std::string_view text;
};

// What the pods of `kind` import or run; none for avf-run.
auto TrainerFiles(check::TrainerKind kind) -> std::vector<TrainerFile>;

// Megatron-LM's pods run this before torchrun: DATA_DIR OUT_DIR.
inline constexpr std::string_view kMegatronDataScript = "avf_megatron_data.py";

}  // namespace avf::trainers
