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
};

}  // namespace avf::deploy
