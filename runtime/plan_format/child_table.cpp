#include "plan_format/child_table.h"

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <atomic>
#include <cstring>

namespace avf::plan_format {

namespace {

pid_t children[kMaxChildren];
std::atomic<int> child_count{0};
std::atomic<int> forwarded_signal{0};

}  // namespace

void ForwardStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = ForwardSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

auto SpawnChild(int slot, std::vector<std::string> argv, std::vector<std::string> env, std::string& error) -> int {
  if (slot < 0 || slot >= kMaxChildren || argv.empty()) {
    error = "no such child slot";
    return -1;
  }
  std::vector<char*> argp, envp;
  for (std::string& a : argv) argp.push_back(a.data());
  for (std::string& e : env) envp.push_back(e.data());
  argp.push_back(nullptr), envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argp[0], nullptr, &attr, argp.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) error = std::strerror(rc), pid = -1;
  children[slot] = pid;
  if (slot >= child_count.load()) child_count = slot + 1;
  if (int sig = forwarded_signal.load(); sig != 0 && pid > 0) kill(pid, sig);
  return pid;
}

void ForwardSignal(int sig) {
  forwarded_signal = sig;
  for (int i = 0, n = child_count.load(); i < n; ++i) {
    if (children[i] > 0) kill(children[i], sig);
  }
}

auto ForwardedSignal() -> int { return forwarded_signal.load(); }

auto EscalationSignal(std::chrono::steady_clock::duration waited) -> int {
  return waited > kStopGrace + kKillAfter ? SIGKILL : waited > kStopGrace ? SIGTERM : 0;
}

auto TakeExited(int pid) -> int {
  for (int i = 0, n = child_count.load(); i < n; ++i) {
    if (children[i] != pid || pid <= 0) continue;
    children[i] = -1;
    return i;
  }
  return -1;
}

auto ChildCount() -> int { return child_count.load(); }

auto ExitCode(int status) -> int { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }
auto ChildPid(int slot) -> int { return slot >= 0 && slot < child_count.load() ? children[slot] : -1; }

}  // namespace avf::plan_format
