#include "run/run_report.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "run/memory_report.h"

namespace avf::run {

namespace {

auto Seconds(double s) -> std::string {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

auto Bytes(int64_t b) -> std::string { return ByteSize(static_cast<double>(b)); }

void Row(llvm::raw_ostream& os, const std::string& what, const std::string& measured, const std::string& predicted) {
  os << fmt::format("  {:<22} {:>12} {:>12}\n", what, measured, predicted);
}

void TimeRows(llvm::raw_ostream& os, const runtime::RunPlan& plan, const train::RunTotals& t) {
  auto n = static_cast<double>(t.steps);
  const parallel::Engine::OwnSeconds& o = t.own;
  const runtime::PlanPredicted::Time& p = plan.predicted.time_breakdown_s;
  Row(os, "step time", Seconds(t.step_s / n), Seconds(plan.predicted.step_time_s));
  Row(os, "  compute", Seconds(train::ComputeSeconds(t.step_s, o) / n), Seconds(p.compute));
  Row(os, "  tensor comm", Seconds(o.tensor / n), Seconds(p.tensor_comm));
  Row(os, "  pipeline comm", Seconds(o.pipeline / n), Seconds(p.pipeline_comm));
  Row(os, "  bubble", Seconds(o.bubble / n), Seconds(p.bubble));
  Row(os, "  data comm", Seconds(o.data / n), Seconds(p.data_comm));
  Row(os, "  optimizer", Seconds(o.optimizer / n), Seconds(p.optimizer));
  if (t.checkpoints > 0) {
    Row(os, fmt::format("checkpoint hold ({})", t.checkpoints),
        Seconds(t.checkpoint_s / static_cast<double>(t.checkpoints)), "");
  }
}

void ThroughputRows(llvm::raw_ostream& os, const runtime::RunPlan& plan, const train::RunTotals& t) {
  double tokens = static_cast<double>(plan.training.tokens_per_step) * static_cast<double>(t.steps);
  double per_gpu = plan.model.flops_per_token * tokens / t.step_s / static_cast<double>(plan.ranks.size());
  Row(os, "tokens/s", fmt::format("{:.4g}", tokens / t.step_s), fmt::format("{:.4g}", plan.predicted.tokens_per_s));
  double peak = plan.hardware.peak_flops;
  Row(os, "MFU", peak > 0 ? fmt::format("{:.2f}%", 100 * per_gpu / peak) : "-",
      fmt::format("{:.2f}%", 100 * plan.predicted.mfu));
}

void MemoryRows(llvm::raw_ostream& os, const runtime::RunPlan& plan, const train::TrainResult& r) {
  const parallel::Engine::MemoryUse& m = r.memory;
  const runtime::PlanPredicted::Memory& p = plan.predicted.memory_breakdown_bytes;
  Row(os, "weights", Bytes(m.weights), Bytes(p.weights));
  Row(os, "gradients", Bytes(m.gradients), Bytes(p.gradients));
  Row(os, "optimizer state", Bytes(m.optimizer), Bytes(p.optimizer));
  Row(os, "activations", Bytes(m.activations), Bytes(p.activations));
  Row(os, "buffers", Bytes(m.scratch), Bytes(p.buffers));
}

}  // namespace

void PrintMeasuredAgainstPredicted(llvm::raw_ostream& os, const runtime::RunPlan& plan,
                                   const train::TrainResult& result) {
  const train::RunTotals& t = result.totals;
  if (t.steps == 0 || t.step_s <= 0) return;
  os << fmt::format("measured on rank 0 (stage {}, mean of {} steps) against predicted for {} x {}:\n", result.stage,
                    t.steps, plan.ranks.size(), plan.hardware.gpu);
  Row(os, "", "measured", "predicted");
  TimeRows(os, plan, t);
  ThroughputRows(os, plan, t);
  MemoryRows(os, plan, result);
}

}  // namespace avf::run
