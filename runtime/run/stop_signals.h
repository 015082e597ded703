// SIGTERM (a pod being deleted, preemption, the launcher passing one on) and
// SIGINT ask a training rank to stop after the step in flight, with a
// checkpoint; a second one kills.
//
// The signals are taken on a thread of their own, never on a thread that
// computes: oneDNN 2.x's JIT sgemm kernels point the stack pointer at a heap
// buffer while they run, so a signal handled on such a thread writes its frame
// into the heap (heap corruption, seen in run_local_signals.test; later
// oneDNN releases keep the stack pointer). OpenMP's threads are made by the thread that opens the first
// parallel region and inherit its signal mask.
#pragma once

#include <atomic>

namespace avf::run {

// Call first thing in a rank, before any OpenMP region or thread: blocks
// SIGTERM and SIGINT on this thread (and so on every thread it starts) and
// starts the one thread that takes them. Until ArmStopSignals they end the
// process as they would by default.
void TakeStopSignalsOnOwnThread();

// From now on the first SIGTERM or SIGINT is stored in `stop` (the trainer
// polls it between steps) and the second ends the process; the copies of
// the parent-death signal (launcher.h FollowSupervisor) count as one.
void ArmStopSignals(std::atomic<int>* stop);

}  // namespace avf::run
