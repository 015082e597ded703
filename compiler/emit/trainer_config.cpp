#include "emit/trainer_config.h"

#include <algorithm>
#include <cmath>

#include <llvm/Support/raw_ostream.h>

#include "emit/megatron_args.h"
#include "emit/torchtitan_toml.h"

namespace avf::emit {

auto CheckpointEverySteps(const plan::Plan& plan) -> int64_t {
  const check::CheckpointSpec& c = plan.job.checkpoint;
  if (c.every_steps) return std::max<int64_t>(1, *c.every_steps);
  double step = plan.chosen.prediction.step_time;
  if (c.every_seconds && step > 0) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::floor(*c.every_seconds / step)));
  }
  return std::max<int64_t>(1, plan.totals.steps);
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
