// slurm.sbatch: the job for a Slurm cluster. One batch script, three steps:
// stage-in (skipped when staged; every source shard's header checked, then
// copier tasks spread over the nodes), the training step (one avf-run per
// node, which starts one rank per GPU) and the export of the kept
// checkpoints that verify.
#include <fmt/format.h>

#include "emit/k8s_pod.h"
#include "emit/manifests.h"
#include "emit/scripts.h"

namespace avf::emit {

namespace {

using deploy::Deployment;

auto Comment(const std::string& text) -> std::string {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "# " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

auto Directives(const Deployment& d) -> std::string {
  std::string nodes = d.elastic_nodes.empty() ? std::to_string(d.nodes)
                                              : fmt::format("{}-{}", d.elastic_nodes.back(), d.elastic_nodes.front());
  std::string s =
      fmt::format("#SBATCH --job-name={}\n#SBATCH --nodes={}\n#SBATCH --ntasks-per-node=1\n", d.name, nodes);
  if (d.resources.gpus > 0) s += fmt::format("#SBATCH --gpus-per-node={}\n", d.resources.gpus);
  s += "#SBATCH --exclusive\n#SBATCH --output=%x-%j.out\n";
  if (!d.queue.empty()) s += fmt::format("#SBATCH --partition={}\n", d.queue);
  if (d.resources.cpus) s += fmt::format("#SBATCH --cpus-per-task={}\n", *d.resources.cpus);
  if (d.resources.memory_mib > 0) s += fmt::format("#SBATCH --mem={}M\n", d.resources.memory_mib);
  // The planner fills one leaf switch before the next: with topology/tree,
  // --switches=1 asks for exactly that when the job fits under one leaf.
  if (d.placement.mode == deploy::TopologyMode::OneLeaf || (d.placement.leaves_used == 1 && d.nodes > 1)) {
    s += "#SBATCH --switches=1\n";
  }
  return s;
}

// Credentials of an object store: the Secret named in the source, as a
// directory of files (one per key) under $AVF_SECRETS; its CA likewise.
auto RemoteExports(const deploy::Remote& r, std::string_view indent) -> std::string {
  std::string s;
  if (!r.ca_configmap.empty()) {
    s += fmt::format("{}export RCLONE_CA_CERT=\"$AVF_SECRETS\"/{}/ca.crt\n", indent, ShellQuote(r.ca_configmap));
  }
  for (const deploy::EnvVar& e : RemoteEnv(r)) {
    if (!e.secret_name.empty()) {
      s += fmt::format("{}export {}=\"$(cat \"$AVF_SECRETS\"/{}/{})\"\n", indent, e.name, ShellQuote(e.secret_name),
                       e.secret_key);
    } else {
      s += fmt::format("{}export {}={}\n", indent, e.name, ShellQuote(e.value));
    }
  }
  return s;
}

auto RangesTable(const deploy::Staging& s) -> std::string {
  std::string table;
  for (const deploy::ShardRange& r : s.ranges) table += fmt::format("{}:{} ", r.first, r.last);
  if (!table.empty()) table.pop_back();
  return table;
}

// A step script written beside the job (the submit folder is shared by the
// nodes) with a quoted here-document, so nothing in it is expanded.
auto StepFile(std::string_view name, const std::string& script) -> std::string {
  return fmt::format("cat > \"$steps/{}\" <<'AVF_SCRIPT'\n{}AVF_SCRIPT\n", name, script);
}

// Copier task k of the srun step takes ranges k, k + tasks, ...; each range
// is retried with backoff before the step fails.
auto CopyRangesScript(int64_t tasks) -> std::string {
  return fmt::format(
      "set -eu\n"
      "k=0\n"
      "for range in $AVF_RANGES; do\n"
      "  if [ $((k % {})) -eq \"$SLURM_PROCID\" ]; then\n"
      "    FIRST=\"${{range%%:*}}\"\n"
      "    LAST=\"${{range##*:}}\"\n"
      "    export FIRST LAST\n"
      "    n=0\n"
      "    until sh \"$(dirname \"$0\")/copy-shards.sh\"; do\n"
      "      n=$((n + 1))\n"
      "      [ \"$n\" -lt 5 ] || exit 1\n"
      "      sleep $((30 * n))\n"
      "    done\n"
      "  fi\n"
      "  k=$((k + 1))\n"
      "done\n",
      tasks);
}

auto StageSection(const Deployment& d) -> std::string {
  const deploy::Staging& s = *d.staging;
  // One copier task per node works through its ranges one after another, so
  // the tiers' bandwidth is shared by that many copies at a time.
  int64_t tasks = s.concurrent_copies, bwlimit = s.bwlimit_kib;
  std::string files =
      StepFile("check-staged.sh", CheckStagedScript(s)) + StepFile("check-source.sh", CheckSourceScript(s)) +
      StepFile("copy-shards.sh", CopyShardsScript(s, bwlimit)) + StepFile("copy-ranges.sh", CopyRangesScript(tasks)) +
      StepFile("seal-staged.sh", SealStagedScript(s));
  // Every source shard's header is checked before any copier starts.
  return fmt::format(
      "# 1. stage-in: {} shards from `{}` to {} in {} ranges, skipped when staged\n"
      "{}"
      "if [ \"$(sh \"$steps/check-staged.sh\")\" != staged ]; then\n"
      "{}"
      "  sh \"$steps/check-source.sh\"\n"
      "  export AVF_RANGES={}\n"
      "  srun --ntasks={} --ntasks-per-node=1 --kill-on-bad-exit=1 sh \"$steps/copy-ranges.sh\"\n"
      "  sh \"$steps/seal-staged.sh\"\n"
      "fi\n\n",
      s.shards, s.source.storage, s.dest_dir, s.ranges.size(), files, RemoteExports(s.source, "  "),
      ShellQuote(RangesTable(s)), tasks);
}

// The job token of the rendezvous store on node 0: made fresh by the script
// and kept in the environment, which srun hands to every task, rather than
// in a file of the shared submit folder, where it would outlive the job.
auto TokenLines(const deploy::JobToken& t) -> std::string {
  int64_t hex = 2 * t.random_bytes;
  return fmt::format(
      "# The rendezvous store on node 0 admits only ranks that present this job's token:\n"
      "# {1} random bytes, fresh for every job, never printed. It stays in the environment\n"
      "# (srun passes it to every task) and is written to no file and no command line;\n"
      "# /proc/PID/environ is readable by this user only, as a 0600 file would be.\n"
      "{0}=\"$(od -An -N{1} -tx1 /dev/urandom | tr -d ' \\n')\"\n"
      "if [ \"${{#{0}}}\" -ne {2} ]; then\n"
      "  echo \"error: could not read {1} random bytes from /dev/urandom\" >&2\n"
      "  exit 1\n"
      "fi\n"
      "# avf-run would prefer a token file named in the submitter's environment.\n"
      "unset AVF_JOB_TOKEN_FILE\n"
      "export {0}\n",
      t.env, t.random_bytes, hex);
}

// A word of avf-run's command line: `${AVF_PLAN}` and `${AVF_SECRETS}/…`
// expand to the script's variables, anything else is quoted.
auto CommandWord(const std::string& word) -> std::string {
  for (std::string_view var : {"AVF_PLAN", "AVF_SECRETS"}) {
    std::string ref = "${" + std::string(var) + "}";
    if (word.rfind(ref, 0) != 0) continue;
    std::string rest = word.substr(ref.size());
    return "\"$" + std::string(var) + "\"" + (rest.empty() ? "" : ShellQuote(rest));
  }
  return ShellQuote(word);
}

// The checkpoint key is a file of the submitting user's: checked before any
// node starts, so that a missing key ends the job at once with its path.
auto KeyCheck(const Deployment& d) -> std::string {
  if (!d.checkpoint_key) return "";
  return fmt::format(
      "# The checkpoints are encrypted with the key in this file (64 hex digits, as\n"
      "# `openssl rand -hex 32` writes them); only its path is on avf-run's command line.\n"
      "key_file={}\n"
      "if [ ! -r \"$key_file\" ]; then\n"
      "  echo \"error: cannot read the checkpoint key $key_file (openssl rand -hex 32 writes one; mode 0600)\" >&2\n"
      "  exit 1\n"
      "fi\n",
      CommandWord(d.checkpoint_key->file));
}

// Each node's avf-run serves its metrics on the node's own address, looked
// up inside the srun'ed script, on that node: the first IPv4 address of
// `hostname -i` (the resolver's) that is not a loopback one, else of
// `hostname -I` (the interfaces'), else 127.0.0.1; AVF_METRICS_ADDRESS,
// exported by the submitter, overrides it (0.0.0.0: every interface).
auto NodeAddressLookup(const Deployment& d) -> std::string {
  if (!d.monitoring) return "";
  return "for addr in $(hostname -i 2>/dev/null) $(hostname -I 2>/dev/null) 127.0.0.1; do "
         "case \"$addr\" in 127.*|*:*) ;; *) break ;; esac; done; ";
}

auto MetricsAddress(const Deployment& d) -> std::string {
  return d.monitoring ? " --metrics-address \"${AVF_METRICS_ADDRESS:-$addr}\"" : "";
}

// MASTER_ADDR, from the nodes the step runs on: every node of the allocation, or for an
// elastic job the most of its counts with a layout that the allocation
// holds (Slurm gives from the fewest to the most; avf-run trains with that
// count's layout and resumes the newest checkpoint resharded).
auto NodesLines(const Deployment& d) -> std::string {
  if (d.elastic_nodes.empty())
    return "export MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\"\n";
  std::string counts;
  for (int64_t n : d.elastic_nodes) counts += (counts.empty() ? "" : " ") + std::to_string(n);
  return fmt::format(
      "# An elastic job: the most nodes of the allocation that have a layout (plan.json `elastic`).\n"
      "for n in {}; do\n"
      "  if [ \"$n\" -le \"$SLURM_JOB_NUM_NODES\" ]; then break; fi\n"
      "done\n"
      "hosts=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n \"$n\" | paste -sd, -)\"\n"
      "echo \"training on $n of the $SLURM_JOB_NUM_NODES nodes allocated: $hosts\"\n"
      "export MASTER_ADDR=\"${{hosts%%,*}}\"\n",
      counts);
}

auto TrainSection(const Deployment& d) -> std::string {
  std::string command;
  for (const std::string& word : d.command) command += (command.empty() ? "" : " ") + CommandWord(word);
  std::string env;
  for (const deploy::EnvVar& e : d.env) env += fmt::format("export {}={}\n", e.name, ShellQuote(e.value));
  std::string srun =
      d.elastic_nodes.empty()
          ? "srun --kill-on-bad-exit=1"
          : "srun --nodes=\"$PET_NNODES\" --ntasks=\"$PET_NNODES\" --nodelist=\"$hosts\" --kill-on-bad-exit=1";
  return fmt::format(
      "# 2. train: one {} per node starts {}\n"
      "{}"
      "{}"
      "export MASTER_PORT={}\n"
      "export PET_NNODES={}\n"
      "export PET_NPROC_PER_NODE={}\n"
      "{}"
      "{}"
      "{} sh -c '{}PET_NODE_RANK=\"$SLURM_NODEID\" exec \"$0\" \"$@\"{}' {}\n"
      "unset {}\n\n",
      d.trainer == check::TrainerKind::Avf ? "avf-run" : "torchrun",
      d.resources.gpus > 0 ? "one rank per GPU" : fmt::format("its {} ranks on the CPUs", d.procs_per_node), env,
      NodesLines(d), d.port, d.elastic_nodes.empty() ? std::to_string(d.nodes) : "\"$n\"", d.procs_per_node,
      KeyCheck(d), TokenLines(d.token), srun, NodeAddressLookup(d), MetricsAddress(d), command, d.token.env);
}

// avf-run (on the PATH, as for training) verifies the kept checkpoints, then
// those that verify are copied.
auto ExportSection(const Deployment& d) -> std::string {
  const deploy::Export& e = *d.export_checkpoints;
  return fmt::format(
      "# 3. export the kept checkpoints that verify to `{}`\n{}{}"
      "export {}=\"$steps/export-list\"\n"
      "sh \"$steps/verify-checkpoints.sh\"\n"
      "{}sh \"$steps/export-checkpoints.sh\"\n",
      e.dest.storage, StepFile("verify-checkpoints.sh", ListCheckpointsScript(e)),
      StepFile("export-checkpoints.sh", ExportScript(e)), kExportListEnv, RemoteExports(e.dest, ""));
}

}  // namespace

auto SlurmScript(const Deployment& d) -> std::string {
  std::string out =
      "#!/bin/bash\n" + Comment(HeaderComment(d, "slurm.sbatch") +
                                "\nSubmit from the folder that holds plan.json: sbatch slurm.sbatch\n"
                                "Needs avf-run and rclone on every node; object-store credentials are read\n"
                                "from $AVF_SECRETS/<secret>/<key> (default ~/.aviflow/secrets).");
  out += Directives(d);
  out += "set -euo pipefail\n";
  out += "AVF_PLAN=\"${AVF_PLAN:-$SLURM_SUBMIT_DIR/plan.json}\"\n";
  // Unquoted, so that `~` is the user's home even where HOME is not set.
  out += "AVF_SECRETS=${AVF_SECRETS:-~/.aviflow/secrets}\n";
  out += "export AVF_PLAN AVF_SECRETS\n";
  out += "steps=\"$SLURM_SUBMIT_DIR/.aviflow-$SLURM_JOB_ID\"\n";
  out += "mkdir -p \"$steps\"\n\n";
  if (d.staging) out += StageSection(d);
  out += TrainSection(d);
  if (d.export_checkpoints) out += ExportSection(d);
  return out;
}

}  // namespace avf::emit
