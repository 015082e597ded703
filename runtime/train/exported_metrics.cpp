#include "train/exported_metrics.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "exposition/metrics_server.h"
#include "plan_format/plan_format.h"

namespace avf::train {

namespace {

using exposition::Family;
using exposition::MetricType;
using exposition::Sample;
using Labels = std::vector<std::pair<std::string, std::string>>;

enum class Id {
#define AVF_METRIC(Id, Name, Type, Label, Predicted, Help) Id,
#include "plan_format/metrics.def"
};

struct Definition {
  const char* name;
  MetricType type;
  const char* label;
  bool predicted;
  const char* help;
};

constexpr Definition kDefinitions[] = {
#define AVF_METRIC(Id, Name, Type, Label, Predicted, Help) {Name, MetricType::Type, Label, Predicted, Help},
#include "plan_format/metrics.def"
};

auto Of(Id id) -> const Definition& { return kDefinitions[static_cast<size_t>(id)]; }

auto RankLabels(const runtime::RunPlan& plan, int rank) -> Labels {
  const runtime::PlanRank& r = plan.ranks[static_cast<size_t>(rank)];
  return {{"job", plan.job.name},
          {"rank", std::to_string(rank)},
          {"node", std::to_string(r.node)},
          {"stage", std::to_string(r.pipeline)},
          {"tensor", std::to_string(r.tensor)},
          {"data", std::to_string(r.data)},
          {"pipeline", std::to_string(r.pipeline)}};
}

// One family of `id` (measured) or its _predicted twin; `values` are
// (label value, number) pairs, the label value "" for a metric without one.
class Families {
 public:
  explicit Families(Labels labels) : labels_(std::move(labels)) {}
  void Add(Id id, bool predicted, const std::vector<std::pair<std::string, double>>& values) {
    const Definition& d = Of(id);
    Family f{std::string(d.name) + (predicted ? "_predicted" : ""),
             predicted ? std::string("The plan's prediction of ") + d.name + ": " + d.help : d.help,
             d.type,
             {}};
    for (const auto& [label, value] : values) {
      Sample s{labels_, value};
      if (*d.label != '\0') s.labels.emplace_back(d.label, label);
      f.samples.push_back(std::move(s));
    }
    out_.push_back(std::move(f));
  }
  void Add(Id id, double value) { Add(id, false, {{"", value}}); }
  void AddBoth(Id id, double measured, double predicted) {
    Add(id, false, {{"", measured}});
    Add(id, true, {{"", predicted}});
  }
  auto Take() -> std::vector<Family> { return std::move(out_); }

 private:
  Labels labels_;
  std::vector<Family> out_;
};

void AddStep(Families& f, const runtime::RunPlan& plan, const RankObservation& o) {
  const runtime::PlanPredicted& p = plan.predicted;
  double peak = plan.hardware.peak_flops;
  // The step's model FLOP/s are the job's; per GPU, as the plan predicts them.
  double per_gpu = o.step.flops_per_s / static_cast<double>(std::max<size_t>(plan.ranks.size(), 1));
  f.Add(Id::Step, static_cast<double>(o.step.step));
  f.Add(Id::StepEnd, o.step_end_unix_s);
  if (o.step.step == 0) return;
  f.Add(Id::Loss, o.step.loss);
  f.Add(Id::LearningRate, o.step.lr);
  f.Add(Id::GradientNorm, o.step.grad_norm);
  f.AddBoth(Id::TokensPerSecond, o.step.tokens_per_s, p.tokens_per_s);
  f.AddBoth(Id::ModelFlops, per_gpu, p.tflops_per_gpu * 1e12);
  f.AddBoth(Id::Mfu, peak > 0 ? per_gpu / peak : 0, p.mfu);
  f.AddBoth(Id::StepSeconds, o.step.step_time_s, p.step_time_s);
}

void AddParts(Families& f, const runtime::RunPlan& plan, const RankObservation& o) {
  if (o.step.step == 0) return;
  const parallel::Engine::OwnSeconds& s = o.own;
  f.Add(Id::StepPart, false,
        {{"compute", ComputeSeconds(o.step.step_time_s, s)},
         {"tensor_comm", s.tensor},
         {"pipeline_comm", s.pipeline},
         {"data_comm", s.data},
         {"bubble", s.bubble},
         {"optimizer", s.optimizer},
         {"checkpoint", o.step.checkpoint_s}});
  const runtime::PlanPredicted::Time& t = plan.predicted.time_breakdown_s;
  f.Add(Id::StepPart, true,
        {{"compute", t.compute},
         {"tensor_comm", t.tensor_comm},
         {"pipeline_comm", t.pipeline_comm},
         {"data_comm", t.data_comm},
         {"bubble", t.bubble},
         {"optimizer", t.optimizer}});
}

// The planner's memory categories, in its order.
auto ByCategory(int64_t weights, int64_t gradients, int64_t optimizer, int64_t activations, int64_t buffers)
    -> std::vector<std::pair<std::string, double>> {
  return {{"weights", static_cast<double>(weights)},
          {"gradients", static_cast<double>(gradients)},
          {"optimizer", static_cast<double>(optimizer)},
          {"activations", static_cast<double>(activations)},
          {"buffers", static_cast<double>(buffers)}};
}

void AddMemory(Families& f, const runtime::RunPlan& plan, const RankObservation& o) {
  const parallel::Engine::MemoryUse& m = o.memory;
  f.Add(Id::Memory, false, ByCategory(m.weights, m.gradients, m.optimizer, m.activations, m.scratch));
  const runtime::PlanPredicted::Memory& p = plan.predicted.memory_breakdown_bytes;
  f.Add(Id::Memory, true, ByCategory(p.weights, p.gradients, p.optimizer, p.activations, p.buffers));
  f.AddBoth(Id::MemoryPeak, static_cast<double>(o.memory_peak_bytes),
            static_cast<double>(plan.predicted.memory_per_gpu_bytes));
}

void AddProgress(Families& f, const runtime::RunPlan& plan, const RankObservation& o) {
  f.Add(Id::DataEpoch, static_cast<double>(o.epoch));
  f.Add(Id::DataSequence, static_cast<double>(o.next_sequence));
  if (plan.checkpoint) {
    if (o.commits) f.Add(Id::CheckpointCommit, o.checkpoint_commit_unix_s);
    f.Add(Id::CheckpointHold, o.step.checkpoint_s);
    if (double predicted = PredictedCheckpointInterval(plan); predicted > 0) {
      f.AddBoth(Id::CheckpointInterval, o.checkpoint_interval_s, predicted);
    }
  }
  f.Add(Id::Restarts, static_cast<double>(o.restarts));
  f.Add(Id::Start, o.start_unix_s);
  f.Add(Id::Nodes, static_cast<double>(plan.hardware.nodes));
  f.Add(Id::NodeCountChanges, static_cast<double>(o.node_count_changes));
}

}  // namespace

auto ComputeSeconds(double step_s, const parallel::Engine::OwnSeconds& own) -> double {
  return std::max(0.0, step_s - (own.tensor + own.pipeline + own.bubble + own.data + own.optimizer));
}

auto PredictedCheckpointInterval(const runtime::RunPlan& plan) -> double {
  if (!plan.checkpoint) return 0;
  return plan_format::PredictedCheckpointInterval(plan.checkpoint->every_seconds, plan.checkpoint->every_steps,
                                                  plan.predicted.step_time_s);
}

auto ExportedFamilies(const runtime::RunPlan& plan, int rank, const RankObservation& o)
    -> std::vector<exposition::Family> {
  Families f(RankLabels(plan, rank));
  AddStep(f, plan, o);
  AddParts(f, plan, o);
  AddMemory(f, plan, o);
  AddProgress(f, plan, o);
  return f.Take();
}

auto UnixNow() -> double {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

RankExporter::RankExporter(const runtime::RunPlan& plan, int rank, exposition::MetricsServer* server)
    : plan_(plan), rank_(rank), server_(server) {
  observed_.commits = rank == 0;
  observed_.start_unix_s = UnixNow();
}

void RankExporter::Started(int64_t step, int64_t restarts, int64_t node_count_changes, double commit_unix_s) {
  observed_.step.step = step;
  observed_.restarts = restarts;
  observed_.node_count_changes = node_count_changes;
  committed_unix_s_.store(commit_unix_s);
}

void RankExporter::Stepped(const StepMetrics& m, const parallel::Engine::OwnSeconds& own,
                           const parallel::Engine::MemoryUse& memory, int64_t epoch, int64_t next_sequence) {
  observed_.step = m;
  observed_.own = own;
  observed_.step_end_unix_s = UnixNow();
  observed_.memory = memory;
  int64_t held = memory.weights + memory.gradients + memory.optimizer + memory.activations + memory.scratch;
  observed_.memory_peak_bytes = std::max(observed_.memory_peak_bytes, held);
  observed_.epoch = epoch;
  observed_.next_sequence = next_sequence;
  totals_.steps += 1;
  totals_.step_s += m.step_time_s;
  if (m.checkpoint_s > 0) totals_.checkpoints += 1, totals_.checkpoint_s += m.checkpoint_s;
  totals_.own.tensor += own.tensor, totals_.own.pipeline += own.pipeline, totals_.own.bubble += own.bubble;
  totals_.own.data += own.data, totals_.own.optimizer += own.optimizer;
}

void RankExporter::CheckpointStarted(double unix_s) {
  if (last_checkpoint_unix_s_ > 0) observed_.checkpoint_interval_s = unix_s - last_checkpoint_unix_s_;
  last_checkpoint_unix_s_ = unix_s;
}

void RankExporter::Publish() {
  if (server_ == nullptr) return;
  observed_.checkpoint_commit_unix_s = committed_unix_s_.load();
  server_->Publish(exposition::RenderText(ExportedFamilies(plan_, rank_, observed_)));
}

}  // namespace avf::train
