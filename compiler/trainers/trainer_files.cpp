#include "trainers/trainer_files.h"

namespace avf::trainers {

namespace {

constexpr TrainerFile kAll[] = {
#define TRAINER_FILE(name, text) TrainerFile{name, text},
#include "trainers/trainer_files.inc"
};

auto Named(std::string_view name) -> TrainerFile {
  for (const TrainerFile& f : kAll) {
    if (f.name == name) return f;
  }
  return {};
}

}  // namespace

auto TrainerFiles(check::TrainerKind kind) -> std::vector<TrainerFile> {
  switch (kind) {
    case check::TrainerKind::Torchtitan: return {Named("avf_shards.py"), Named("avf_token_shards.py")};
    case check::TrainerKind::Megatron: return {Named("avf_shards.py"), Named(kMegatronDataScript)};
    case check::TrainerKind::Avf: break;
  }
  return {};
}

}  // namespace avf::trainers
