// The schedule generator: pure functions of (kind, P, p, M, V); see
// schedule.h for the rules and their sources.
#include "parallel/schedule.h"

#include <algorithm>

#include <fmt/format.h>

namespace avf::parallel {

namespace {

auto Fail(const std::string& message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// Interleaving proper: V = 1 under `interleaved` runs the 1F1B order.
auto Interleaves(const PipelineShape& s) -> bool { return s.kind == PipelineSchedule::Interleaved && s.chunks > 1; }

auto CheckCounts(const PipelineShape& s) -> llvm::Error {
  if (s.stages < 1) return Fail(fmt::format("a pipeline needs at least 1 stage, not {}", s.stages));
  if (s.micro_batches < 1) return Fail(fmt::format("a step needs at least 1 micro-batch, not {}", s.micro_batches));
  if (s.chunks < 1) return Fail(fmt::format("a stage needs at least 1 model chunk, not {}", s.chunks));
  // Each bound alone keeps the products below (P·V, 2·M·V) far from overflow.
  if (s.stages > kMaxOpsPerStage || s.micro_batches > kMaxOpsPerStage || s.chunks > kMaxOpsPerStage ||
      s.micro_batches * s.chunks > kMaxOpsPerStage / 2) {
    return Fail(
        fmt::format("{} stages, {} micro-batches and {} chunks per stage exceed what a schedule may hold "
                    "({} ops per stage)",
                    s.stages, s.micro_batches, s.chunks, kMaxOpsPerStage));
  }
  return llvm::Error::success();
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

auto ValidateShape(const PipelineShape& s) -> llvm::Error {
  if (llvm::Error e = CheckCounts(s)) return e;
  if (s.chunks > 1 && s.kind != PipelineSchedule::Interleaved) {
    return Fail(fmt::format("{} model chunks per stage need the interleaved schedule; {} runs one chunk per stage",
                            s.chunks, runtime::Name(s.kind).str()));
  }
  if (!Interleaves(s)) return llvm::Error::success();
  if (s.stages == 1) {
    return Fail(
        fmt::format("the interleaved schedule with {} model chunks needs more than one pipeline stage", s.chunks));
  }
  if (s.micro_batches % s.stages != 0) {
    return Fail(
        fmt::format("the interleaved schedule needs the micro-batches per step to be a multiple of the "
                    "pipeline stages (it runs them in groups of P), but M = {} and P = {}",
                    s.micro_batches, s.stages));
  }
  return llvm::Error::success();
}

auto Phases(const PipelineShape& s, int64_t stage) -> llvm::Expected<StagePhases> {
  if (llvm::Error e = ValidateShape(s)) return e;
  if (stage < 0 || stage >= s.stages) {
    return Fail(fmt::format("stage {} is outside the pipeline's stages 0..{}", stage, s.stages - 1));
  }
  int64_t warmup = WarmupForwards(s, stage);
  return StagePhases{warmup, s.micro_batches * s.chunks - warmup, warmup};
}

auto StageSchedule(const PipelineShape& s, int64_t stage) -> llvm::Expected<std::vector<PipelineOp>> {
  auto phases = Phases(s, stage);
  if (!phases) return phases.takeError();
  std::vector<PipelineOp> ops;
  ops.reserve(static_cast<size_t>(2 * s.micro_batches * s.chunks));
  for (int64_t k = 0; k < phases->warmup; ++k) ops.push_back(NthOp(s, k, false));
  for (int64_t k = 0; k < phases->steady; ++k) {
    ops.push_back(NthOp(s, phases->warmup + k, false));
    ops.push_back(NthOp(s, k, true));
  }
  for (int64_t k = phases->steady; k < phases->steady + phases->cooldown; ++k) ops.push_back(NthOp(s, k, true));
  return ops;
}

auto StageSchedule(PipelineSchedule kind, int64_t stages, int64_t stage, int64_t micro_batches, int64_t chunks)
    -> llvm::Expected<std::vector<PipelineOp>> {
  return StageSchedule(PipelineShape{kind, stages, micro_batches, chunks}, stage);
}

auto AllStageSchedules(const PipelineShape& s) -> llvm::Expected<std::vector<std::vector<PipelineOp>>> {
  if (llvm::Error e = ValidateShape(s)) return e;
  std::vector<std::vector<PipelineOp>> all;
  for (int64_t p = 0; p < s.stages; ++p) {
    auto ops = StageSchedule(s, p);
    if (!ops) return ops.takeError();
    all.push_back(std::move(*ops));
  }
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

auto PeakInFlight(const PipelineShape& s, int64_t stage) -> llvm::Expected<int64_t> {
  auto ops = StageSchedule(s, stage);
  if (!ops) return ops.takeError();
  return PeakInFlight(*ops);
}

auto Name(OpKind kind) -> llvm::StringRef { return kind == OpKind::kForward ? "F" : "B"; }

auto Describe(const PipelineOp& op) -> std::string {
  return fmt::format("{} mb {} chunk {}", Name(op.kind).str(), op.micro_batch, op.chunk);
}

}  // namespace avf::parallel
