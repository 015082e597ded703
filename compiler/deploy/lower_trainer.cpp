// The training pods of a job whose trainer is torchtitan or Megatron-LM:
// torchrun on every node, with the rendezvous the pods already have (the
// operator's or JobSet's MASTER_ADDR and PET_* variables, srun's on Slurm),
// reading the plan translated into the trainer's own configuration beside
// plan.json, with the Python files that read the token shards for it.
#include <string>

#include "deploy/lower_context.h"
#include "deploy/shell_quote.h"
#include "trainers/megatron.h"
#include "trainers/torchtitan.h"
#include "trainers/trainer_files.h"

namespace avf::deploy {

namespace {

auto DefaultEntry(check::TrainerKind kind) -> std::string {
  return std::string(kind == check::TrainerKind::Torchtitan ? trainers::kTorchtitanEntry : trainers::kMegatronEntry);
}

auto TrainerConfigFile(check::TrainerKind kind) -> std::string {
  return kind == check::TrainerKind::Torchtitan ? "torchtitan.toml" : "megatron.args";
}

// Megatron-LM reads indexed datasets: each node first writes its view of
// the shards (indexes beside links to them) to the same local path, and
// rank 0 caches the sample indices in the run folder for the others.
void LowerMegatronData(Deployment& o) {
  o.trainer_paths.megatron_view_dir =
      o.target == Target::Slurm ? "/tmp/avf-megatron-data-" + o.name : "/tmp/avf-megatron-data";
  if (!o.run_dir.empty()) o.trainer_paths.megatron_cache_dir = o.run_dir + "/megatron_cache";
}

}  // namespace

void LowerTrainerCommand(LowerContext& c) {
  Deployment& o = c.out;
  const check::TrainerSpec& t = c.job.trainer;
  o.trainer = t.kind;
  if (t.kind == check::TrainerKind::Avf) return;
  o.trainer_config_name = TrainerConfigFile(t.kind);
  for (const trainers::TrainerFile& f : trainers::TrainerFiles(t.kind)) o.trainer_files.emplace_back(f.name, f.text);
  std::string entry = t.entry.value.empty() ? DefaultEntry(t.kind) : t.entry.value;
  // Beside plan.json: the ConfigMap's mount, or the batch script's folder.
  std::string dir = o.target == Target::Slurm ? "\"${AVF_PLAN%/*}\"" : "/etc/aviflow";
  std::string config = dir + "/" + o.trainer_config_name;
  std::string torchrun =
      "exec torchrun --nnodes=\"$PET_NNODES\" --nproc-per-node=\"$PET_NPROC_PER_NODE\" "
      "--node-rank=\"$PET_NODE_RANK\" --master-addr=\"$MASTER_ADDR\" --master-port=\"$MASTER_PORT\" ";
  std::string script;
  if (t.kind == check::TrainerKind::Torchtitan) {
    // The TOML imports avf_token_shards, which imports avf_shards.
    script = "export PYTHONPATH=" + dir + "${PYTHONPATH:+:$PYTHONPATH}\n" + torchrun + "-m " + ShellQuote(entry) +
             " --job.config_file " + config;
  } else {
    LowerMegatronData(o);
    script = "set -e\npython3 " + dir + "/" + std::string(trainers::kMegatronDataScript) + " " +
             ShellQuote(o.trainer_paths.data_dir) + " " + ShellQuote(o.trainer_paths.megatron_view_dir) + "\n" +
             // One argument per line: a value with spaces stays one argument.
             "mapfile -t args < " + config + "\n" + torchrun + ShellQuote(entry) + " \"${args[@]}\"";
  }
  o.command = {"bash", "-c", script};
  const cost::Layout& l = c.plan.chosen.layout;
  if (t.kind == check::TrainerKind::Megatron && l.tensor > 1 && l.zero <= 1) {
    o.env.push_back(EnvVar::Literal("CUDA_DEVICE_MAX_CONNECTIONS", "1",
                                    "Megatron-LM refuses tensor parallelism without it: its communication "
                                    "overlaps compute only when kernels run in issue order"));
  }
}

}  // namespace avf::deploy
