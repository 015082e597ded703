// The processes a launcher started, and the stop signals passed on to them:
// aviflowc run --local starts one avf-run per node, avf-run's node launcher
// one rank per local rank, and both pass SIGTERM and SIGINT on the same way
// (the stop the ranks agree on, docs/cli.md). The table lives in static
// storage so that the signal handler may use it (kill() only, which is
// async-signal-safe). One table per process.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace avf::plan_format {

inline constexpr int kMaxChildren = 4096;

// Once the child that matters has ended, the others get this long to exit on
// their own (a failed peer is noticed at the next collective, a stop is agreed
// on within a step), then SIGTERM, and SIGKILL this much later.
inline constexpr auto kStopGrace = std::chrono::seconds(10);
inline constexpr auto kKillAfter = std::chrono::seconds(5);

// The signal due `waited` after that end: 0, SIGTERM, then SIGKILL.
auto EscalationSignal(std::chrono::steady_clock::duration waited) -> int;

// Installs the handler that passes SIGTERM and SIGINT on to every child.
void ForwardStopSignals();

// Starts argv[0] with `argv` and `env` (NAME=VALUE) in a process group of
// its own, so that a Ctrl-C at the terminal reaches the launcher only, which
// passes it on once, and records it as child `slot` (0, 1, ... in order; a
// stop already passed on is sent to it at once). Its pid, or -1 with `error`
// set (and the slot recorded as never started).
auto SpawnChild(int slot, std::vector<std::string> argv, std::vector<std::string> env, std::string& error) -> int;

// Passes `sig` on to every child still running and remembers it.
void ForwardSignal(int sig);

// 0, or the signal last passed on.
auto ForwardedSignal() -> int;

// The slot of child `pid`, which has exited and is forgotten; -1 when `pid`
// is no child of the table.
auto TakeExited(int pid) -> int;

// Children recorded, and the pid in a slot (<= 0: exited or never started).
auto ChildCount() -> int;
auto ChildPid(int slot) -> int;

// A wait status as an exit code: the child's own, or 128 + the signal that
// killed it.
auto ExitCode(int status) -> int;

}  // namespace avf::plan_format
