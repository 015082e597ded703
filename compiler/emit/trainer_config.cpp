#include "emit/trainer_config.h"

#include <llvm/Support/raw_ostream.h>

#include "emit/megatron_args.h"
#include "emit/torchtitan_toml.h"

namespace avf::emit {

auto TrainerConfigName(check::TrainerKind kind) -> std::string_view {
  switch (kind) {
    case check::TrainerKind::Torchtitan: return "torchtitan.toml";
    case check::TrainerKind::Megatron: return "megatron.args";
    case check::TrainerKind::Avf: break;
  }
  return "";
}

auto TrainerConfigText(const plan::Plan& plan, const deploy::TrainerPaths& paths) -> std::string {
  std::string text;
  llvm::raw_string_ostream out(text);
  switch (plan.job.trainer.kind) {
    case check::TrainerKind::Torchtitan: WriteTorchtitanToml(plan, paths, out); break;
    case check::TrainerKind::Megatron:
      for (const std::string& word : MegatronArguments(plan, paths)) out << word << "\n";
      break;
    case check::TrainerKind::Avf: break;
  }
  out.flush();
  return text;
}

}  // namespace avf::emit
