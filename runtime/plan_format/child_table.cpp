#include "plan_format/child_table.h"

#include <signal.h>
#include <sys/types.h>

#include <atomic>

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

void SetChild(int slot, int pid) {
  if (slot < 0 || slot >= kMaxChildren) return;
  children[slot] = pid;
  if (slot >= child_count.load()) child_count = slot + 1;
  if (int sig = forwarded_signal.load(); sig != 0 && pid > 0) kill(pid, sig);
}

void ForwardSignal(int sig) {
  forwarded_signal = sig;
  for (int i = 0, n = child_count.load(); i < n; ++i) {
    if (children[i] > 0) kill(children[i], sig);
  }
}

auto ForwardedSignal() -> int { return forwarded_signal.load(); }

auto TakeExited(int pid) -> int {
  for (int i = 0, n = child_count.load(); i < n; ++i) {
    if (children[i] != pid || pid <= 0) continue;
    children[i] = -1;
    return i;
  }
  return -1;
}

auto ChildCount() -> int { return child_count.load(); }
auto ChildPid(int slot) -> int { return slot >= 0 && slot < child_count.load() ? children[slot] : -1; }

}  // namespace avf::plan_format
