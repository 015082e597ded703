// The predicted totals against their parts (plan-format.md, predicted): run
// by `avf-run check-plan`, not by a run, since they only inform people. The
// writer prints doubles exactly, so only the order of additions may differ.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "plan/check_plan.h"
#include "plan/problems.h"

namespace avf::runtime {

namespace {

auto Close(double a, double b) -> bool {
  return std::fabs(a - b) <= std::max(1e-9 * std::max(std::fabs(a), std::fabs(b)), 1e-12);
}

void Expect(Problems& p, const char* path, double value, double from_parts) {
  if (!Close(value, from_parts)) p.Addf(path, "{}, but its parts give {}", value, from_parts);
}

void CheckMemory(const RunPlan& plan, Problems& p) {
  const PlanPredicted& pr = plan.predicted;
  const PlanPredicted::Memory& m = pr.memory_breakdown_bytes;
  int64_t sum = m.weights + m.gradients + m.optimizer + m.activations + m.buffers;
  // Each part is rounded to whole bytes on its own.
  if (std::llabs(sum - pr.memory_per_gpu_bytes) > 5) {
    p.Addf("predicted.memory_per_gpu_bytes", "{}, but its breakdown sums to {}", pr.memory_per_gpu_bytes, sum);
  }
  if (pr.fits != (pr.memory_per_gpu_bytes <= plan.hardware.gpu_memory_bytes)) {
    p.Addf("predicted.fits", "{}, but {} bytes per GPU against {} of GPU memory", pr.fits, pr.memory_per_gpu_bytes,
           plan.hardware.gpu_memory_bytes);
  }
}

// The nodes and leaves the widest data group spans.
void CheckDataSpan(const RunPlan& plan, Problems& p) {
  int64_t nodes = 0, leaves = 0;
  for (const RankGroup& g : plan.groups.data) {
    std::set<int64_t> n, l;
    for (int64_t r : g) {
      n.insert(plan.ranks[r].node);
      l.insert(plan.ranks[r].leaf);
    }
    nodes = std::max<int64_t>(nodes, n.size());
    leaves = std::max<int64_t>(leaves, l.size());
  }
  const PlanPredicted& pr = plan.predicted;
  if (pr.data_group_span_nodes != nodes || pr.data_group_span_leaves != leaves) {
    p.Addf("predicted.data_group_span", "{} nodes, {} leaves, but the widest data group spans {} nodes, {} leaves",
           pr.data_group_span_nodes, pr.data_group_span_leaves, nodes, leaves);
  }
}

void CheckTimes(const RunPlan& plan, Problems& p) {
  const PlanPredicted& pr = plan.predicted;
  const PlanPredicted::Time& t = pr.time_breakdown_s;
  const PlanTraining& tr = plan.training;
  Expect(p, "training.tokens", tr.tokens, static_cast<double>(tr.steps) * static_cast<double>(tr.tokens_per_step));
  Expect(p, "predicted.step_time_s", pr.step_time_s,
         t.compute + t.tensor_comm + t.pipeline_comm + t.bubble + t.data_comm + t.optimizer);
  Expect(p, "predicted.tokens_per_s", pr.tokens_per_s, static_cast<double>(tr.tokens_per_step) / pr.step_time_s);
  Expect(p, "predicted.time_to_train_s", pr.time_to_train_s,
         static_cast<double>(tr.steps) * pr.step_time_s + pr.staging_s + pr.checkpoint_s);
  Expect(p, "predicted.gpu_hours", pr.gpu_hours, pr.time_to_train_s / 3600 * static_cast<double>(tr.gpus));
  Expect(p, "predicted.mfu", pr.mfu, pr.tflops_per_gpu * 1e12 / plan.hardware.peak_flops);
  const std::optional<double>& price = plan.hardware.gpu_hour_price;
  if (price.has_value() != pr.cost.has_value()) {
    p.Add("predicted.cost", "null exactly when hardware.gpu_hour_price is null");
  } else if (price) {
    Expect(p, "predicted.cost", *pr.cost, pr.gpu_hours * *price);
  }
}

}  // namespace

auto CheckPredicted(const RunPlan& plan, llvm::StringRef name) -> llvm::Error {
  Problems p(name);
  CheckMemory(plan, p);
  CheckDataSpan(plan, p);
  CheckTimes(plan, p);
  return p.TakeError();
}

}  // namespace avf::runtime
