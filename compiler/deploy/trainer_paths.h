// Where a training pod sees what another trainer's configuration names
// (compiler/emit/torchtitan_toml.h, megatron_args.h). Lowering decides these
// paths; the emitters only spell them.
#pragma once

#include <string>

namespace avf::deploy {

struct TrainerPaths {
  std::string data_dir;        // the staged dataset's folder of token shards
  std::string checkpoint_dir;  // "" when the job writes no checkpoints
  std::string init_dir;        // "" when the job starts from scratch
  std::string output_dir;      // the trainer's own logs and dumps
  // Megatron-LM: the folder each node writes its indexed-dataset view of the
  // shards into before torchrun (avf_megatron_data.py), the same path on
  // every node; and where rank 0 caches its sample indices for the others
  // (the run folder), "" when no folder is shared: every rank builds them.
  std::string megatron_view_dir;
  std::string megatron_cache_dir;
};

}  // namespace avf::deploy
