// The lock of a run folder and of a checkpoint folder: two jobs that wrote
// to one folder would interleave their metrics and their checkpoints. A job
// holds DIR/.avf-run.lock with flock() for its whole life; the descriptor is
// inherited by the processes it starts (the node launcher's ranks), so the
// lock stays held while any of them lives, and the kernel releases it when
// the last one exits, however it ends: a crash leaves no stale lock.
#pragma once

#include <string>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

namespace avf::run {

// The name of the lock file inside a locked folder.
constexpr const char* kLockFileName = ".avf-run.lock";

// Creates `dir` when missing and locks it for this process and its children.
// A lock this process already holds through an inherited descriptor (it was
// started by the job's launcher) is kept. A folder locked by another job is
// an error naming the folder, the pid that took the lock, and `flag` (the
// option that chooses another folder).
auto LockDirectory(const std::string& dir, llvm::StringRef flag) -> llvm::Error;

}  // namespace avf::run
