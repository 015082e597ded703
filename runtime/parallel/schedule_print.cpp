// `avf-run --plan p.json --print-schedule`: every stage's op list as a table,
// for people debugging a pipeline. Deterministic: it depends on the plan only.
#include <fmt/format.h>

#include "parallel/schedule.h"

namespace avf::parallel {

namespace {

auto Fail(llvm::StringRef name, const std::string& message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", name.str().c_str(), message.c_str());
}

auto Plural(int64_t n, const char* one, const char* many) -> std::string {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

auto Layers(const runtime::PlanStage& st) -> std::string {
  if (st.layers == 1) return fmt::format("{}", st.first_layer);
  return fmt::format("{}-{}", st.first_layer, st.first_layer + st.layers - 1);
}

auto Peer(const std::optional<ChunkRef>& peer, int64_t chunks, const char* none) -> std::string {
  if (!peer) return none;
  if (chunks == 1) return fmt::format("stage {}", peer->stage);
  return fmt::format("stage {} chunk {}", peer->stage, peer->chunk);
}

void PrintSummary(const runtime::RunPlan& plan, const PipelineShape& s, const ScheduleCheck& check,
                  llvm::raw_ostream& os) {
  os << fmt::format("job `{}`: {} schedule, {}, {} per stage, {} per step\n", plan.job.name,
                    runtime::Name(s.kind).str(), Plural(s.stages, "pipeline stage", "pipeline stages"),
                    Plural(s.chunks, "model chunk", "model chunks"),
                    Plural(s.micro_batches, "micro-batch", "micro-batches"));
  if (s.chunks > 1) os << fmt::format("chunk c of stage p is virtual stage c x {} + p\n", s.stages);
  os << "F forward, B backward; recv: where the input comes from (data: the tokens; loss: the last virtual stage's "
        "own loss); send: where the output goes; peak in flight: the most forwards whose backward is still to run\n";
  int64_t busy = 2 * s.micro_batches * s.chunks;
  os << fmt::format(
      "simulated with equal op times: {} slots per step, {} busy on every stage (bubble {}); at most {} "
      "queued on one link\n",
      check.rounds, busy, check.rounds - busy, Plural(check.max_queued, "message", "messages"));
}

void PrintStageHeader(const runtime::RunPlan& plan, const PipelineShape& s, int64_t p, const StagePhases& ph,
                      int64_t peak, llvm::raw_ostream& os) {
  os << fmt::format("\nstage {}:", p);
  for (int64_t c = 0; c < s.chunks; ++c) {
    const runtime::PlanStage& st = plan.stages[static_cast<size_t>(p * s.chunks + c)];
    std::string role = st.embedding && st.output ? " (embedding, output)"
                       : st.embedding            ? " (embedding)"
                       : st.output               ? " (output)"
                                                 : "";
    os << fmt::format("{} chunk {} = layers {}{}", c == 0 ? "" : ",", c, Layers(st), role);
  }
  os << fmt::format("\n  warm-up {}, steady {}, cool-down {}; peak in flight {}\n",
                    Plural(ph.warmup, "forward", "forwards"),
                    Plural(ph.steady, "forward+backward pair", "forward+backward pairs"),
                    Plural(ph.cooldown, "backward", "backwards"), peak);
  os << fmt::format("  {:>5}  {:<2}  {:>4}  {:>5}  {:<9}  {:<16}  {}\n", "#", "op", "mb", "chunk", "layers", "recv",
                    "send");
}

void PrintStageOps(const runtime::RunPlan& plan, const PipelineShape& s, int64_t p, const std::vector<PipelineOp>& ops,
                   llvm::raw_ostream& os) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const PipelineOp& op = ops[i];
    OpLinks links = Neighbors(op, s.stages, p, s.chunks);
    bool forward = op.kind == OpKind::kForward;
    std::string recv = Peer(links.recv_from, s.chunks, forward ? "data" : "loss");
    std::string send = Peer(links.send_to, s.chunks, forward ? "loss" : "-");
    const runtime::PlanStage& st = plan.stages[static_cast<size_t>(p * s.chunks + op.chunk)];
    os << fmt::format("  {:>5}  {:<2}  {:>4}  {:>5}  {:<9}  {:<16}  {}\n", i + 1, Name(op.kind).str(), op.micro_batch,
                      op.chunk, Layers(st), recv, send);
  }
}

}  // namespace

auto PrintSchedule(const runtime::ValidPlan& valid, llvm::raw_ostream& os, llvm::StringRef name) -> llvm::Error {
  const runtime::RunPlan& plan = *valid;
  PipelineShape s = runtime::ShapeOf(plan);
  std::vector<std::vector<PipelineOp>> all = AllStageSchedules(s);
  auto check = CheckSchedule(s, all);
  if (!check) return Fail(name, "the generated pipeline schedule is invalid: " + llvm::toString(check.takeError()));
  PrintSummary(plan, s, *check, os);
  for (int64_t p = 0; p < s.stages; ++p) {
    const std::vector<PipelineOp>& ops = all[static_cast<size_t>(p)];
    PrintStageHeader(plan, s, p, Phases(s, p), PeakInFlight(ops), os);
    PrintStageOps(plan, s, p, ops, os);
  }
  return llvm::Error::success();
}

}  // namespace avf::parallel
