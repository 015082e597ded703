#include "run/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "plan_format/launch.h"

namespace avf::run {

namespace {

std::atomic<std::atomic<int>*> armed{nullptr};
// The process whose death sends SIGTERM (launcher.h FollowSupervisor); 0: none.
pid_t supervisor = 0;

// The kernel sends the parent-death signal once per thread that asked for
// it, all at the supervisor's death: one event, not a second signal.
auto FromDeadSupervisor(const siginfo_t* info) -> bool {
  return supervisor > 0 && info != nullptr && info->si_pid == supervisor && getppid() != supervisor;
}

void RequestStop(int sig, siginfo_t* info, void*) {
  std::atomic<int>* stop = armed.load();
  if (stop != nullptr && stop->load() != 0 && FromDeadSupervisor(info)) return;
  if (stop == nullptr || stop->load() != 0) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  stop->store(sig);
}

auto StopSignals() -> sigset_t {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// The one thread with the signals unblocked, besides threads that libraries
// started before main (OpenBLAS's), which compute in no JIT code. It sleeps
// until the process ends; the handler runs on it.
void WaitForSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  for (;;) pause();
}

}  // namespace

void TakeStopSignalsOnOwnThread() {
  if (const char* value = std::getenv(plan_format::kEnvSupervisorPid)) supervisor = std::atoi(value);
  struct sigaction sa {};
  sa.sa_sigaction = RequestStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(WaitForSignals).detach();
}

void ArmStopSignals(std::atomic<int>* stop) { armed.store(stop); }

}  // namespace avf::run
