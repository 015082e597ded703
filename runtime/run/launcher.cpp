#include "run/launcher.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

extern char** environ;

namespace avf::run {

namespace {

using Clock = std::chrono::steady_clock;

// Seconds the surviving ranks get to notice a failed peer and exit on their
// own (with a message naming it), then again between SIGTERM and SIGKILL.
constexpr auto kGrace = std::chrono::seconds(10);

// The children, for the signal handler (async-signal-safe: kill() only).
constexpr int kMaxChildren = 1024;
pid_t children[kMaxChildren];
std::atomic<int> child_count{0};
std::atomic<int> forwarded_signal{0};

void ForwardSignal(int sig) {
  forwarded_signal = sig;
  int n = child_count.load();
  for (int i = 0; i < n; ++i) {
    if (children[i] > 0) kill(children[i], sig);
  }
}

void InstallForwarding() {
  struct sigaction sa {};
  sa.sa_handler = ForwardSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// The environment of the children: ours, plus thread counts when unset.
auto ChildEnvironment(int64_t nproc) -> std::vector<std::string> {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  int64_t threads = std::max<int64_t>(1, static_cast<int64_t>(cores) / nproc);
  for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    if (!std::getenv(name)) env.push_back(fmt::format("{}={}", name, threads));
  }
  // OpenMP's threads otherwise spin after each parallel loop and take the
  // cores from the BLAS's threads that run next.
  if (!std::getenv("OMP_WAIT_POLICY")) env.push_back("OMP_WAIT_POLICY=PASSIVE");
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

auto Spawn(std::vector<std::string> argv, std::vector<std::string>& env, int64_t local_rank) -> std::optional<pid_t> {
  argv.push_back(fmt::format("--local-rank={}", local_rank));
  std::vector<char*> args = Pointers(argv), envp = Pointers(env);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), envp.data());
  if (rc == 0) return pid;
  llvm::errs() << fmt::format("avf-run: error: cannot start local rank {} ({}): {}\n", local_rank, argv[0],
                              std::strerror(rc));
  return std::nullopt;
}

auto StatusText(int status) -> std::string {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
}

auto ExitCode(int status) -> int { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// Waits for every child; after the first failure, escalates on the survivors.
class Supervisor {
 public:
  Supervisor(const runtime::NodeIdentity& node) : node_(node) {}

  auto Wait() -> int {
    int running = child_count.load();
    while (running > 0) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        --running;
        Reaped(pid, status);
        continue;
      }
      if (pid < 0 && errno != EINTR) break;
      Escalate();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (forwarded_signal) {
      llvm::errs() << fmt::format("avf-run: stopped every rank of node {} on signal {} ({})\n", node_.node_rank,
                                  forwarded_signal.load(), strsignal(forwarded_signal));
    }
    return exit_code_;
  }

 private:
  // Every failure is reported (the first one may be a rank that only saw
  // the real failure of another); the exit status is the first one's.
  void Reaped(pid_t pid, int status) {
    int n = child_count.load();
    for (int i = 0; i < n; ++i) {
      if (children[i] != pid) continue;
      children[i] = -1;
      if (status == 0) return;
      if (Forwarded(status)) {
        if (exit_code_ == 0) exit_code_ = ExitCode(status);
        return;
      }
      bool first = exit_code_ == 0;
      if (first) exit_code_ = ExitCode(status), failed_at_ = Clock::now();
      llvm::errs() << fmt::format("avf-run: local rank {} (global rank {}) {}{}\n", i,
                                  node_.node_rank * node_.nproc_per_node + i, StatusText(status),
                                  first ? "; stopping the node's other ranks" : "");
    }
  }

  // A child that died of the signal the launcher passed on, or stopped cleanly
  // on it (exit 128 + signal), is not a failure to report: the node was asked
  // to stop.
  static auto Forwarded(int status) -> bool {
    int sig = forwarded_signal;
    if (sig == 0) return false;
    return (WIFSIGNALED(status) && WTERMSIG(status) == sig) || (WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig);
  }

  void Escalate() {
    if (!failed_at_) return;
    auto waited = Clock::now() - *failed_at_;
    int sig = waited > 2 * kGrace ? SIGKILL : waited > kGrace ? SIGTERM : 0;
    if (sig == 0 || sig == sent_) return;
    sent_ = sig;
    int n = child_count.load();
    for (int i = 0; i < n; ++i) {
      if (children[i] > 0) kill(children[i], sig);
    }
  }

  const runtime::NodeIdentity& node_;
  int exit_code_ = 0;
  int sent_ = 0;
  std::optional<Clock::time_point> failed_at_;
};

}  // namespace

auto LocalRankGiven(const runtime::IdentityFlags& flags, const runtime::Environment& env) -> bool {
  bool pet = env.lower_bound("PET_") != env.end() && env.lower_bound("PET_")->first.rfind("PET_", 0) == 0;
  // Under torchrun RANK is this process's rank; under the PET_* convention it is the pod's.
  bool torchrun_rank = !pet && env.count("RANK") > 0;
  return flags.local_rank || flags.rank || env.count("LOCAL_RANK") > 0 || torchrun_rank;
}

auto LaunchNode(const std::vector<std::string>& args, const runtime::NodeIdentity& node) -> int {
  int64_t nproc = node.nproc_per_node;
  if (nproc > kMaxChildren) {
    llvm::errs() << fmt::format("avf-run: error: {} ranks per node; at most {} are supported\n", nproc, kMaxChildren);
    return 1;
  }
  llvm::outs() << fmt::format("avf-run: node {} of {}: starting {} ranks ({}..{} of {})\n", node.node_rank,
                              node.nnodes, nproc, node.node_rank * nproc, node.node_rank * nproc + nproc - 1,
                              node.world_size);
  llvm::outs().flush();
  std::vector<std::string> argv = args;
  argv[0] = SelfPath(argv[0]);
  std::vector<std::string> env = ChildEnvironment(nproc);
  InstallForwarding();
  Supervisor supervisor(node);
  for (int64_t i = 0; i < nproc; ++i) {
    std::optional<pid_t> pid = Spawn(argv, env, i);
    children[i] = pid.value_or(-1);
    child_count = static_cast<int>(i + 1);
    if (!pid) {
      ForwardSignal(SIGTERM);
      supervisor.Wait();
      return 1;
    }
    if (forwarded_signal) kill(*pid, forwarded_signal);
  }
  return supervisor.Wait();
}

}  // namespace avf::run
