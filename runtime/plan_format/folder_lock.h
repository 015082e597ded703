// The lock of a run folder and of a checkpoint folder, which aviflowc run
// --local and avf-run take the same way: two jobs that wrote to one folder
// would interleave their plans, metrics and checkpoints. A job holds
// DIR/.avf-run.lock with flock() for its whole life; the descriptor is
// inherited by the processes it starts (avf-run's node launchers and their
// ranks), so the lock stays held while any of them lives, and the kernel
// releases it when the last one exits, however it ends: a crash leaves no
// stale lock.
#pragma once

#include <string>
#include <string_view>

namespace avf::plan_format {

// The name of the lock file inside a locked folder.
inline constexpr const char* kLockFileName = ".avf-run.lock";

struct FolderLock {
  enum class State { Locked, InUse, Failed };
  State state = State::Failed;
  std::string path;    // DIR/.avf-run.lock
  std::string holder;  // InUse: the pid that took the lock, when it wrote a readable one
  std::string error;   // Failed: why the folder or its lock file could not be made or locked
};

// Creates `dir` when missing and locks it for this process and the processes
// it starts. A lock this process already holds through an inherited
// descriptor (its launcher took it) is kept.
auto LockFolder(const std::string& dir) -> FolderLock;

// "started by process N; " for a folder in use whose holder wrote its pid, else "".
auto HolderClause(const FolderLock& lock) -> std::string;

// For a lock not taken: "DIR is in use by a running job (started by process
// N; DIR/.avf-run.lock is locked); wait for it to end or stop it, or pass
// another FLAG", or the failure; "" when locked.
auto LockProblem(const std::string& dir, const FolderLock& lock, std::string_view flag) -> std::string;

}  // namespace avf::plan_format
