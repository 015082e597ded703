#include "driver/local_run.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <fmt/format.h>

#include "driver/outputs.h"
#include "emit/plan_json.h"
#include "plan_format/child_table.h"
#include "plan_format/folder_lock.h"
#include "plan_format/launch.h"
#include "plan_format/plan_format.h"

namespace avf::driver {

namespace pf = plan_format;

namespace {

// A `local` tier's mount is relative to the job file's folder.
auto TierPath(const Options& o, const check::Location& loc) -> std::string {
  llvm::SmallString<256> root(loc.mount);
  if (!llvm::sys::path::is_absolute(root)) {
    llvm::SmallString<256> base(o.input == "-" ? "." : llvm::sys::path::parent_path(o.input));
    if (base.empty()) base = ".";
    llvm::sys::path::append(base, loc.mount);
    root = base;
  }
  if (!loc.path.empty()) llvm::sys::path::append(root, loc.path);
  return root.str().str();
}

// avf-run beside aviflowc (build tree and install share bin/), or $AVIFLOW_AVF_RUN.
auto AvfRunPath() -> std::string {
  if (const char* env = std::getenv("AVIFLOW_AVF_RUN"); env && *env) return env;
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, reinterpret_cast<void*>(&AvfRunPath));
  llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(path, "avf-run");
  return path.str().str();
}

// A port on the loopback interface that is free now, for rank 0's store.
auto FreePort() -> int {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

// A fresh job token for this run's ranks only.
auto RandomToken() -> std::string {
  std::random_device device;
  std::string token;
  for (int i = 0; i < 8; ++i) token += fmt::format("{:08x}", device());
  return token;
}

// How the plan places its ranks: nodes, and ranks on each (rank r sits on node
// r / ranks-per-node).
struct NodeShape {
  int64_t nodes = 1, ranks_per_node = 1;
  // An elastic start: its fewest nodes (0: a start of a fixed size, on
  // `nodes`, which is then the most) and the port of its rounds' host.
  int64_t min_nodes = 0;
  int rdzv_port = 0;
};

auto ShapeOf(const plan::Plan& plan) -> NodeShape {
  NodeShape shape;
  int64_t on_first = 0;
  for (const plan::Rank& r : plan.ranks) {
    shape.nodes = std::max<int64_t>(shape.nodes, r.node + 1);
    on_first += r.node == 0 ? 1 : 0;
  }
  shape.ranks_per_node = std::max<int64_t>(on_first, 1);
  return shape;
}

// This process's environment without any rank variables of its own, plus
// node `n`'s: the PET_* variables avf-run's node launcher reads, the store's
// address, the job token, and this process as the launcher's supervisor.
auto LockRunFolder(const std::string& dir, diag::DiagnosticEngine& diags) -> bool {
  pf::FolderLock lock = pf::LockFolder(dir);
  if (lock.state == pf::FolderLock::State::InUse) {
    diags.Report(diag::DiagId::RunFolderInUse, {}, dir, pf::HolderClause(lock), lock.path);
  } else if (lock.state == pf::FolderLock::State::Failed) {
    diags.Report(diag::DiagId::RunFolderNotLocked, {}, dir, lock.error);
  }
  return lock.state == pf::FolderLock::State::Locked;
}

// Node `n`'s environment. An elastic start's launchers get the node counts
// as MIN:MAX, their slot and the rounds' host (node slot 0's launcher)
// instead of a node rank (run/elastic_launcher.h).
auto NodeEnvironment(int64_t n, NodeShape shape, int port, const std::string& token) -> std::vector<std::string> {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    llvm::StringRef var(*e);
    if (pf::IsLaunchVariable(std::string_view(var.split('=').first))) continue;
    env.push_back(var.str());
  }
  if (shape.min_nodes > 0) {
    env.insert(env.end(), {fmt::format("{}={}:{}", pf::kEnvNodes, shape.min_nodes, shape.nodes),
                           fmt::format("{}={}", pf::kEnvNodeSlot, n),
                           fmt::format("{}=127.0.0.1:{}", pf::kEnvRdzvEndpoint, shape.rdzv_port)});
  } else {
    env.insert(env.end(),
               {fmt::format("{}={}", pf::kEnvNodeRank, n), fmt::format("{}={}", pf::kEnvNodes, shape.nodes)});
  }
  env.insert(env.end(),
             {fmt::format("{}={}", pf::kEnvRanksPerNode, shape.ranks_per_node),
              fmt::format("{}=127.0.0.1", pf::kEnvMasterAddr), fmt::format("{}={}", pf::kEnvMasterPort, port),
              fmt::format("{}={}", pf::kEnvJobToken, token), fmt::format("{}={}", pf::kEnvSupervisorPid, getpid())});
  return env;
}

// Waits for every node launcher. When one fails the others are asked to stop
// (their ranks would fail at their next collective anyway); each launcher
// stops, escalates on and reports its own ranks. The status is the first
// failure's, but a node whose rank was killed by a signal (128 + signal,
// not the one passed on) is the cause of the others' failures and wins.
//
// An elastic start's launchers go on without a failed one (they agree on
// fewer nodes); the status is node slot 0's, whose launcher hosts the rounds
// and ends the job. The launchers still running 10 s after it ended (a hung
// node) get SIGTERM, and SIGKILL 5 s later.
auto WaitForNodes(int nodes, bool elastic) -> int {
  int status_out = 0, running = nodes;
  bool killed = false;
  std::optional<std::chrono::steady_clock::time_point> host_ended;
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, host_ended ? WNOHANG : 0);
    if (pid == 0) {
      int sig = pf::EscalationSignal(std::chrono::steady_clock::now() - *host_ended);
      if (sig != 0 && sig != pf::ForwardedSignal()) pf::ForwardSignal(sig);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int n = pf::TakeExited(pid);
    if (n < 0) continue;
    --running;
    int forwarded = pf::ForwardedSignal();
    if (WIFSIGNALED(status) && WTERMSIG(status) != forwarded) {
      llvm::errs() << fmt::format("aviflowc: the avf-run of node {}{} was killed by signal {} ({})\n",
                                  elastic ? "slot " : "", n, WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
    int code = pf::ExitCode(status);
    if (elastic) {
      if (n == 0) {
        status_out = code;
        host_ended = std::chrono::steady_clock::now();
      }
      continue;
    }
    bool cause = code > 128 && code != 128 + forwarded && code != 128 + SIGTERM && code != 128 + SIGINT;
    if (code != 0 && (status_out == 0 || (cause && !killed))) status_out = code, killed = cause;
    if (code != 0 && running > 0) pf::ForwardSignal(SIGTERM);
  }
  return status_out;
}

// Node `n`'s avf-run: its ranks serve metrics from metrics_port + its first
// rank (avf-run adds the local rank).
auto NodeArgs(std::vector<std::string> args, int64_t n, NodeShape shape, int metrics_port) -> std::vector<std::string> {
  if (metrics_port == 0) return args;
  args.insert(args.end(), {"--metrics-port", std::to_string(metrics_port + n * shape.ranks_per_node)});
  return args;
}

// Starts one avf-run per node of the plan (each the node's launcher, which
// starts and supervises that node's ranks), passes SIGTERM and SIGINT on to
// them, and returns their status.
auto LaunchNodes(const std::vector<std::string>& args, NodeShape shape, int metrics_port, diag::DiagnosticEngine& diags)
    -> int {
  if (shape.nodes > pf::kMaxChildren) {
    diags.Report(diag::DiagId::CannotRunRuntime, {}, args[0],
                 fmt::format("the plan has {} nodes; a local run starts at most {}", shape.nodes, pf::kMaxChildren));
    return -1;
  }
  int port = FreePort();
  while (shape.min_nodes > 0 && (shape.rdzv_port == 0 || shape.rdzv_port == port)) shape.rdzv_port = FreePort();
  std::string token = RandomToken();
  pf::ForwardStopSignals();
  for (int64_t n = 0; n < shape.nodes; ++n) {
    std::string error;
    if (pf::SpawnChild(static_cast<int>(n), NodeArgs(args, n, shape, metrics_port),
                       NodeEnvironment(n, shape, port, token), error) < 0) {
      pf::ForwardSignal(SIGTERM);
      WaitForNodes(static_cast<int>(n), false);
      diags.Report(diag::DiagId::CannotRunRuntime, {}, args[0], error.empty() ? "it did not start" : error);
      return -1;
    }
  }
  return WaitForNodes(static_cast<int>(shape.nodes), shape.min_nodes > 0);
}

// What a local run reads must be here: the shards of the training and the
// held-out data, and the `init` weights, on `local` tiers; an encrypting
// job's key comes from --checkpoint-key-file (there are no Secrets here).
auto CheckLocalInputs(const Options& o, const check::JobSpec& job, diag::DiagnosticEngine& diags) -> bool {
  std::vector<std::pair<const check::DatasetSpec*, llvm::SMRange>> datasets{{&job.dataset, job.at.dataset_source}};
  if (job.validation) datasets.emplace_back(&job.validation->dataset, job.at.validation_source);
  size_t errors = diags.error_count();
  for (const auto& [ds, at] : datasets) {
    if (ds->source.storage_kind == check::StorageKind::Local) continue;
    diags.Report(diag::DiagId::RunNeedsLocalData, at, ds->name, Name(ds->source.storage_kind), ds->source.storage)
        .Help(
            "point the dataset at a `local` tier (`storage here { kind = local; mount = \"data\" }`) holding "
            "shards made by `avf-run tokenize`");
  }
  if (job.init && job.init->storage_kind != check::StorageKind::Local) {
    diags
        .Report(diag::DiagId::RunNeedsLocalInit, job.at.init, job.name, Name(job.init->storage_kind), job.init->storage)
        .Help("copy the folder (config.json, model.safetensors) to a `local` tier and point `init` there");
  }
  std::string secret = job.checkpoint.enabled ? job.checkpoint.encrypt_secret : "";
  if (!secret.empty() && o.checkpoint_key_file.empty()) {
    diags.Report(diag::DiagId::RunNeedsKeyFile, job.at.encrypt, job.name, secret)
        .Help("`openssl rand -hex 32 > checkpoint.key` writes a key; keep it: resuming needs the same key");
  } else if (secret.empty() && !o.checkpoint_key_file.empty()) {
    diags.Report(diag::DiagId::RunKeyFileUnused, job.name_range, job.name)
        .Help("add `encrypt = secret(\"NAME\")` to the job's checkpoint record, or leave out --checkpoint-key-file");
  }
  return diags.error_count() == errors;
}

// avf-run's command line: the plan, the run folder, and each input on a
// `local` tier by its path here.
auto AvfRunArgs(const Options& o, const check::JobSpec& job, const std::string& dir) -> std::vector<std::string> {
  std::vector<std::string> args{
      AvfRunPath(), "--plan", dir + "/plan.json", "--data-dir", TierPath(o, job.dataset.source), "--run-dir", dir};
  if (job.validation) {
    args.insert(args.end(), {"--validation-dir", TierPath(o, job.validation->dataset.source)});
  }
  if (job.init) args.insert(args.end(), {"--init", TierPath(o, *job.init)});
  if (job.checkpoint.enabled && job.checkpoint.dir && job.checkpoint.dir->storage_kind == check::StorageKind::Local) {
    args.insert(args.end(), {"--checkpoint-dir", TierPath(o, *job.checkpoint.dir)});
  }
  if (!o.checkpoint_key_file.empty()) args.insert(args.end(), {"--checkpoint-key-file", o.checkpoint_key_file});
  if (o.max_steps > 0) args.insert(args.end(), {"--max-steps", std::to_string(o.max_steps)});
  for (const auto& [flag, value] : o.forwarded) args.insert(args.end(), {flag, value});
  return args;
}

// The node counts the plan has a layout on: its own, or its elastic family's.
auto NodeCountsOf(const plan::Plan& plan) -> std::vector<int64_t> {
  if (!plan.elastic) return {plan.nodes_used};
  std::vector<int64_t> counts;
  for (const plan::ElasticLayout& e : plan.elastic->layouts) counts.push_back(e.nodes);
  return counts;
}

}  // namespace

auto RunLocal(const Options& o, const plan::Plan& plan, diag::DiagnosticEngine& diags) -> int {
  const check::JobSpec& job = plan.job;
  if (!CheckLocalInputs(o, job, diags)) return -1;
  int64_t ranks = static_cast<int64_t>(plan.ranks.size());
  if (o.ranks != 0 && o.ranks != ranks) {
    diags.Report(diag::DiagId::RunRankCount, job.at.gpus, o.ranks, o.ranks, job.name, ranks)
        .Help("the plan's rank count is the job's `gpus`");
    return -1;
  }
  NodeShape shape = ShapeOf(plan);
  if (o.nodes != 0 && o.nodes != shape.nodes) {
    std::vector<int64_t> counts = NodeCountsOf(plan);
    if (std::find(counts.begin(), counts.end(), o.nodes) == counts.end()) {
      diags
          .Report(diag::DiagId::RunNodeCount, job.name_range, o.nodes, job.name, o.nodes,
                  plan_format::CountsText(counts))
          .Help(job.elastic ? "the counts of `elastic` without a layout are left out (W0806)"
                            : "a job trains on other node counts with `elastic { min_nodes = N }`");
      return -1;
    }
    shape.nodes = o.nodes;
  } else if (plan.elastic) {
    // Every node count of the family, from one launcher per node slot: they
    // agree on the count themselves, and go on with fewer when one is lost.
    shape.min_nodes = job.elastic->min_nodes;
    shape.nodes = plan.elastic->max_nodes;
  }
  std::string dir = o.run_dir.empty() ? "runs/" + job.name : o.run_dir;
  // Locked before plan.json is written, so a job that uses the folder keeps
  // its plan; avf-run's launchers inherit the lock and keep it (folder_lock.h).
  if (!LockRunFolder(dir, diags)) return -1;
  std::string json;
  llvm::raw_string_ostream stream(json);
  emit::WritePlanJson(plan, stream);
  stream.flush();
  if (!WriteOutputFiles({{dir + "/plan.json", json}}, diags)) return -1;
  llvm::outs().flush();
  return LaunchNodes(AvfRunArgs(o, job, dir), shape, o.metrics_port, diags);
}

}  // namespace avf::driver
