// The processes a launcher started, and the stop signals passed on to them:
// aviflowc run --local starts one avf-run per node, avf-run's node launcher
// one rank per local rank, and both pass SIGTERM and SIGINT on the same way
// (the stop the ranks agree on, docs/cli.md). The table lives in static
// storage so that the signal handler may use it (kill() only, which is
// async-signal-safe). One table per process.
#pragma once

namespace avf::plan_format {

inline constexpr int kMaxChildren = 4096;

// Installs the handler that passes SIGTERM and SIGINT on to every child.
void ForwardStopSignals();

// Records child `slot` (0, 1, ... in order; -1 for one that did not start).
// A stop already passed on is sent to a new child at once.
void SetChild(int slot, int pid);

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

}  // namespace avf::plan_format
