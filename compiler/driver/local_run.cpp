#include "driver/local_run.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <fmt/format.h>

#include "driver/outputs.h"
#include "emit/plan_json.h"

namespace avf::driver {

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

// This process's environment without any rank variables of its own, and
// with each rank's share of the cores for the BLAS and OpenMP (unless the
// user chose).
auto BaseEnvironment(int64_t world) -> std::vector<std::string> {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    llvm::StringRef var(*e);
    if (var.startswith("PET_") || var.startswith("RANK=") || var.startswith("WORLD_SIZE=") ||
        var.startswith("LOCAL_RANK=") || var.startswith("MASTER_") || var.startswith("AVF_JOB_TOKEN")) {
      continue;
    }
    env.push_back(var.str());
  }
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (const char* name : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}) {
    if (!std::getenv(name)) env.push_back(fmt::format("{}={}", name, std::max<int64_t>(1, cores / world)));
  }
  // OpenMP's threads otherwise spin after each parallel loop and take the
  // cores from the BLAS's threads that run next (3x slower steps seen).
  if (!std::getenv("OMP_WAIT_POLICY")) env.push_back("OMP_WAIT_POLICY=PASSIVE");
  return env;
}

// BaseEnvironment plus the rank variables of `rank`.
auto RankEnvironment(int64_t rank, int64_t world, int port, const std::string& token) -> std::vector<std::string> {
  std::vector<std::string> env = BaseEnvironment(world);
  env.insert(env.end(), {fmt::format("RANK={}", rank), fmt::format("WORLD_SIZE={}", world),
                         fmt::format("LOCAL_RANK={}", rank), "MASTER_ADDR=127.0.0.1",
                         fmt::format("MASTER_PORT={}", port), "AVF_JOB_TOKEN=" + token});
  return env;
}

// Starts one avf-run per rank and waits for all; when one fails the others
// are stopped (they would fail at their next collective anyway).
auto LaunchRanks(const std::vector<std::string>& args, int64_t world, diag::DiagnosticEngine& diags) -> int {
  int port = FreePort();
  std::string token = RandomToken();
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::vector<llvm::sys::ProcessInfo> procs;
  std::vector<std::vector<std::string>> envs(static_cast<size_t>(world));
  for (int64_t r = 0; r < world; ++r) {
    envs[static_cast<size_t>(r)] = RankEnvironment(r, world, port, token);
    std::vector<llvm::StringRef> env(envs[static_cast<size_t>(r)].begin(), envs[static_cast<size_t>(r)].end());
    std::string error;
    bool failed = false;
    procs.push_back(llvm::sys::ExecuteNoWait(args[0], refs, llvm::ArrayRef<llvm::StringRef>(env), {}, 0, &error, &failed));
    if (failed) {
      for (const llvm::sys::ProcessInfo& p : procs) {
        if (p.Pid > 0) kill(p.Pid, SIGTERM);
      }
      diags.Report(diag::DiagId::CannotRunRuntime, {}, args[0], error.empty() ? "it did not start" : error);
      return -1;
    }
  }
  // Ctrl-C reaches the ranks directly (one process group): they stop after
  // the step in flight with a checkpoint, and this process reports their status.
  signal(SIGINT, SIG_IGN);
  int status = 0;
  for (size_t i = 0; i < procs.size(); ++i) {
    llvm::sys::ProcessInfo done = llvm::sys::Wait(procs[i], 0, /*WaitUntilTerminates=*/true);
    if (done.ReturnCode != 0 && status == 0) {
      status = done.ReturnCode < 0 ? 1 : done.ReturnCode;
      for (size_t j = i + 1; j < procs.size(); ++j) kill(procs[j].Pid, SIGTERM);
    }
  }
  return status;
}

}  // namespace

auto RunLocal(const Options& o, const plan::Plan& plan, diag::DiagnosticEngine& diags) -> int {
  const check::JobSpec& job = plan.job;
  const check::Location& data = job.dataset.source;
  if (data.storage_kind != check::StorageKind::Local) {
    diags.Report(diag::DiagId::RunNeedsLocalData, job.at.dataset_source, job.dataset.name, Name(data.storage_kind),
                 data.storage)
        .Help("point the dataset at a `local` tier (`storage here { kind = local; mount = \"data\" }`) holding "
              "shards made by `avf-run tokenize`");
    return -1;
  }
  int64_t ranks = static_cast<int64_t>(plan.ranks.size());
  if (o.ranks != 0 && o.ranks != ranks) {
    diags.Report(diag::DiagId::RunRankCount, job.at.gpus, o.ranks, o.ranks, job.name, ranks)
        .Help("the plan's rank count is the job's `gpus`");
    return -1;
  }
  std::string dir = o.run_dir.empty() ? "runs/" + job.name : o.run_dir;
  std::string plan_path = dir + "/plan.json", json;
  llvm::raw_string_ostream stream(json);
  emit::WritePlanJson(plan, stream);
  stream.flush();
  if (!WriteOutputFiles({{plan_path, json}}, diags)) return -1;
  std::vector<std::string> args{AvfRunPath(), "--plan", plan_path, "--data-dir", TierPath(o, data), "--run-dir", dir};
  if (job.checkpoint.enabled && job.checkpoint.dir && job.checkpoint.dir->storage_kind == check::StorageKind::Local) {
    args.insert(args.end(), {"--checkpoint-dir", TierPath(o, *job.checkpoint.dir)});
  }
  if (o.max_steps > 0) args.insert(args.end(), {"--max-steps", std::to_string(o.max_steps)});
  llvm::outs().flush();
  if (ranks > 1) return LaunchRanks(args, ranks, diags);
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::vector<std::string> base = BaseEnvironment(1);
  std::vector<llvm::StringRef> env(base.begin(), base.end());
  std::string error;
  int status = llvm::sys::ExecuteAndWait(args[0], refs, llvm::ArrayRef<llvm::StringRef>(env), {}, 0, 0, &error);
  if (status < 0) {
    diags.Report(diag::DiagId::CannotRunRuntime, {}, args[0], error.empty() ? "it did not start" : error);
    return -1;
  }
  return status;
}

}  // namespace avf::driver
