#include "run/launcher.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>

#include "cpu/blas_core.h"
#include "plan_format/child_table.h"

extern char** environ;

namespace avf::run {

namespace {

using Clock = std::chrono::steady_clock;

namespace pf = plan_format;

// The cores this process may run on (its CPU affinity, so a container's
// cpuset), not every core of the machine.
auto Cores() -> int64_t {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// The environment of the children: ours with this launcher as their
// supervisor, plus the thread defaults.
auto ChildEnvironment(int64_t nproc) -> std::vector<std::string> {
  std::vector<std::string> env;
  std::string supervisor = std::string(kSupervisorVariable) + "=";
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, supervisor.c_str(), supervisor.size()) != 0) env.emplace_back(*e);
  }
  env.push_back(supervisor + std::to_string(getpid()));
  for (std::string& var : ThreadDefaults(nproc)) env.push_back(std::move(var));
  return env;
}

auto Pointers(std::vector<std::string>& strings) -> std::vector<char*> {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The running binary, so children are this same avf-run whatever PATH holds.
auto SelfPath(const std::string& fallback) -> std::string {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : fallback;
}

// Local rank `local_rank` as child `local_rank` of the table (child_table.h).
auto Spawn(std::vector<std::string> argv, const std::vector<std::string>& env, int64_t local_rank) -> bool {
  argv.push_back(fmt::format("--local-rank={}", local_rank));
  std::string error;
  if (pf::SpawnChild(static_cast<int>(local_rank), argv, env, error) > 0) return true;
  llvm::errs() << fmt::format("avf-run: error: cannot start local rank {} ({}): {}\n", local_rank, argv[0], error);
  return false;
}

auto StatusText(int status) -> std::string {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
}

// How much a child's end says about the node's, lowest first: success, a
// stop on a signal (forwarded, or sent to a rank and agreed on by all), a
// failure (often a rank that only lost a peer), a rank killed by a signal
// that the launcher did not send (the cause of the others' failures).
enum class Outcome { kSuccess, kStopped, kFailed, kKilled };

// Waits for every child; once one has exited, escalates on the others.
class Supervisor {
 public:
  Supervisor(const runtime::NodeIdentity& node, const std::function<void()>& every_quarter_second)
      : node_(node), every_quarter_second_(every_quarter_second) {}

  auto Wait() -> int {
    int running = pf::ChildCount();
    Clock::time_point tick = Clock::now();
    while (running > 0) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        if (Reaped(pid, status)) --running;
        continue;
      }
      if (pid < 0 && errno != EINTR) break;
      Escalate();
      if (every_quarter_second_ && Clock::now() - tick >= std::chrono::milliseconds(250)) {
        tick = Clock::now();
        every_quarter_second_();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (int sig = pf::ForwardedSignal()) {
      llvm::errs() << fmt::format("avf-run: stopped every rank of node {} on signal {} ({})\n", node_.node_rank, sig,
                                  strsignal(sig));
    }
    return exit_code_;
  }

 private:
  auto RankName(int i) const -> std::string {
    return fmt::format("rank {} (local rank {} of node {})", node_.node_rank * node_.nproc_per_node + i, i,
                       node_.node_rank);
  }

  auto Classify(int status) const -> Outcome {
    if (status == 0) return Outcome::kSuccess;
    if (WIFEXITED(status)) {
      int code = WEXITSTATUS(status);
      return code == 128 + SIGTERM || code == 128 + SIGINT ? Outcome::kStopped : Outcome::kFailed;
    }
    int sig = WTERMSIG(status);
    if (sig == pf::ForwardedSignal()) return Outcome::kStopped;
    bool escalated = sent_ != 0 && (sig == SIGTERM || sig == SIGKILL);
    return escalated ? Outcome::kFailed : Outcome::kKilled;
  }

  // Every failure is reported (the first one may be a rank that only saw
  // the real failure of another); the status is the most telling one's.
  auto Reaped(pid_t pid, int status) -> bool {
    int i = pf::TakeExited(pid);
    if (i < 0) return false;
    if (!first_exit_) first_exit_ = Clock::now(), first_rank_ = i;
    Outcome outcome = Classify(status);
    bool first_failure = outcome >= Outcome::kFailed && worst_ < Outcome::kFailed;
    if (outcome > worst_) worst_ = outcome, exit_code_ = pf::ExitCode(status);
    if (outcome >= Outcome::kFailed) {
      llvm::errs() << fmt::format("avf-run: {} {}{}\n", RankName(i), StatusText(status),
                                  first_failure ? "; stopping the node's other ranks" : "");
    }
    return true;
  }

  void Escalate() {
    if (!first_exit_) return;
    auto waited = Clock::now() - *first_exit_;
    int sig = pf::EscalationSignal(waited);
    if (sig == 0 || sig == sent_) return;
    sent_ = sig;
    for (int i = 0, n = pf::ChildCount(); i < n; ++i) {
      if (pf::ChildPid(i) <= 0) continue;
      llvm::errs() << fmt::format("avf-run: {} is still running {} s after local rank {} exited; sending {}\n",
                                  RankName(i), std::chrono::duration_cast<std::chrono::seconds>(waited).count(),
                                  first_rank_, sig == SIGKILL ? "SIGKILL" : "SIGTERM");
      kill(pf::ChildPid(i), sig);
    }
  }

  const runtime::NodeIdentity& node_;
  const std::function<void()>& every_quarter_second_;
  int exit_code_ = 0;
  Outcome worst_ = Outcome::kSuccess;
  int sent_ = 0;
  int first_rank_ = 0;
  std::optional<Clock::time_point> first_exit_;
};

}  // namespace

void FollowSupervisor() {
  const char* value = std::getenv(kSupervisorVariable);
  if (!value || !*value) return;
  char* end = nullptr;
  long supervisor = std::strtol(value, &end, 10);
  if (*end != '\0' || supervisor <= 1) return;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The supervisor died before the request took effect: this process was
  // handed to another parent, and nobody would stop it.
  if (getppid() != static_cast<pid_t>(supervisor)) {
    llvm::errs() << fmt::format("avf-run: its supervisor (process {}, {}) is gone; stopping\n", supervisor,
                                kSupervisorVariable);
    std::exit(128 + SIGTERM);
  }
}

auto LocalRankGiven(const runtime::IdentityFlags& flags, const runtime::Environment& env) -> bool {
  namespace pf = plan_format;
  bool pet = env.count(pf::kEnvNodeRank) > 0 || env.count(pf::kEnvRanksPerNode) > 0 || env.count(pf::kEnvNodes) > 0;
  // Under torchrun RANK is this process's rank; under the PET_* convention it is the pod's.
  bool torchrun_rank = !pet && env.count(pf::kEnvRank) > 0;
  return flags.local_rank || flags.rank || env.count(pf::kEnvLocalRank) > 0 || torchrun_rank;
}

auto ThreadDefaults(int64_t ranks) -> std::vector<std::string> {
  std::vector<std::string> vars;
  int64_t threads = std::max<int64_t>(1, Cores() / std::max<int64_t>(1, ranks));
  for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    if (!std::getenv(name)) vars.push_back(fmt::format("{}={}", name, threads));
  }
  if (!std::getenv("OMP_WAIT_POLICY")) vars.emplace_back("OMP_WAIT_POLICY=PASSIVE");
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    std::string core = cpu::BetterOpenBlasCore(cpu::OpenBlasCore(), cpu::CpuVectorLevel());
    if (!core.empty()) vars.push_back("OPENBLAS_CORETYPE=" + core);
  }
  return vars;
}

void ApplyThreadDefaults(const std::vector<std::string>& args) {
  std::vector<std::string> vars = ThreadDefaults(1);
  if (vars.empty()) return;
  for (const std::string& var : vars) {
    size_t eq = var.find('=');
    setenv(var.substr(0, eq).c_str(), var.substr(eq + 1).c_str(), 1);
  }
  std::vector<std::string> argv = args;
  std::vector<char*> pointers = Pointers(argv);
  llvm::outs().flush();
  execv(SelfPath(args[0]).c_str(), pointers.data());
}

auto LaunchNode(const std::vector<std::string>& args, const runtime::NodeIdentity& node,
                const std::function<void()>& every_quarter_second) -> int {
  int64_t nproc = node.nproc_per_node;
  if (nproc > pf::kMaxChildren) {
    llvm::errs() << fmt::format("avf-run: error: {} ranks per node; at most {} are supported\n", nproc,
                                pf::kMaxChildren);
    return 1;
  }
  llvm::outs() << fmt::format("avf-run: node {} of {}: starting {} ranks ({}..{} of {})\n", node.node_rank, node.nnodes,
                              nproc, node.node_rank * nproc, node.node_rank * nproc + nproc - 1, node.world_size);
  llvm::outs().flush();
  std::vector<std::string> argv = args;
  argv[0] = SelfPath(argv[0]);
  std::vector<std::string> env = ChildEnvironment(nproc);
  pf::ForwardStopSignals();
  Supervisor supervisor(node, every_quarter_second);
  for (int64_t i = 0; i < nproc; ++i) {
    if (!Spawn(argv, env, i)) {
      pf::ForwardSignal(SIGTERM);
      supervisor.Wait();
      return 1;
    }
  }
  return supervisor.Wait();
}

void StopRanks() {
  for (int i = 0, n = pf::ChildCount(); i < n; ++i) {
    if (pf::ChildPid(i) > 0) kill(pf::ChildPid(i), SIGTERM);
  }
}

}  // namespace avf::run
