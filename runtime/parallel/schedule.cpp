// The schedule generator: pure functions of (kind, P, p, M, V); see
// schedule.h for the rules and their sources.
#include "parallel/schedule.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

namespace avf::parallel {

namespace {

// Interleaving proper: V = 1 under `interleaved` runs the 1F1B order.
auto Interleaves(const PipelineShape& s) -> bool { return s.kind == PipelineSchedule::Interleaved && s.chunks > 1; }

// What every function here relies on; ValidatePlan refused any plan without it.
void AssertRunnable(const PipelineShape& s, int64_t stage) {
  assert(!runtime::ShapeProblem(s) && stage >= 0 && stage < s.stages);
  (void)s, (void)stage;
}

// The k-th forward (backward: `backward`) of an interleaved stage, as
// Megatron's get_schedule_table with groups of P micro-batches, then
// get_model_chunk_id (reversed for backwards).
auto InterleavedOp(const PipelineShape& s, int64_t k, bool backward) -> PipelineOp {
  int64_t group = s.stages * s.chunks;
  int64_t within = k % group;
  int64_t micro_batch = (k / group) * s.stages + within % s.stages;
  int64_t chunk = within / s.stages;
  if (backward) return {OpKind::kBackward, micro_batch, s.chunks - 1 - chunk};
  return {OpKind::kForward, micro_batch, chunk};
}

auto NthOp(const PipelineShape& s, int64_t k, bool backward) -> PipelineOp {
  if (Interleaves(s)) return InterleavedOp(s, k, backward);
  return {backward ? OpKind::kBackward : OpKind::kForward, k, 0};
}

// Warm-up forwards of `stage`; the rest follows from it (schedule.h).
auto WarmupForwards(const PipelineShape& s, int64_t stage) -> int64_t {
  int64_t forwards = s.micro_batches * s.chunks;
  if (s.kind == PipelineSchedule::Gpipe) return forwards;
  if (!Interleaves(s)) return std::min(s.stages - stage - 1, forwards);
  return std::min(2 * (s.stages - stage - 1) + (s.chunks - 1) * s.stages, forwards);
}

}  // namespace

auto Phases(const PipelineShape& s, int64_t stage) -> StagePhases {
  AssertRunnable(s, stage);
  int64_t warmup = WarmupForwards(s, stage);
  return StagePhases{warmup, s.micro_batches * s.chunks - warmup, warmup};
}

auto StageSchedule(const PipelineShape& s, int64_t stage) -> std::vector<PipelineOp> {
  StagePhases phases = Phases(s, stage);
  std::vector<PipelineOp> ops;
  ops.reserve(static_cast<size_t>(2 * s.micro_batches * s.chunks));
  for (int64_t k = 0; k < phases.warmup; ++k) ops.push_back(NthOp(s, k, false));
  for (int64_t k = 0; k < phases.steady; ++k) {
    ops.push_back(NthOp(s, phases.warmup + k, false));
    ops.push_back(NthOp(s, k, true));
  }
  for (int64_t k = phases.steady; k < phases.steady + phases.cooldown; ++k) ops.push_back(NthOp(s, k, true));
  return ops;
}

auto AllStageSchedules(const PipelineShape& s) -> std::vector<std::vector<PipelineOp>> {
  std::vector<std::vector<PipelineOp>> all;
  for (int64_t p = 0; p < s.stages; ++p) all.push_back(StageSchedule(s, p));
  return all;
}

auto Neighbors(const PipelineOp& op, int64_t stages, int64_t stage, int64_t chunks) -> OpLinks {
  int64_t v = VirtualStage(stage, op.chunk, stages), last = stages * chunks - 1;
  std::optional<ChunkRef> previous, next;
  if (v > 0) previous = ChunkOfVirtualStage(v - 1, stages);
  if (v < last) next = ChunkOfVirtualStage(v + 1, stages);
  if (op.kind == OpKind::kForward) return {previous, next};
  return {next, previous};
}

auto PeakInFlight(const std::vector<PipelineOp>& ops) -> int64_t {
  int64_t held = 0, peak = 0;
  for (const PipelineOp& op : ops) {
    held += op.kind == OpKind::kForward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

auto PeakInFlight(const PipelineShape& s, int64_t stage) -> int64_t { return PeakInFlight(StageSchedule(s, stage)); }

auto Name(OpKind kind) -> llvm::StringRef { return kind == OpKind::kForward ? "F" : "B"; }

auto Describe(const PipelineOp& op) -> std::string {
  return fmt::format("{} mb {} chunk {}", Name(op.kind).str(), op.micro_batch, op.chunk);
}

}  // namespace avf::parallel
