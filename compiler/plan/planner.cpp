#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cost/counts.h"
#include "plan/batch_advice.h"
#include "plan/elastic.h"
#include "plan/search.h"
#include "plan/tables.h"
#include "plan_format/rank_layout.h"
#include "trainers/trainer.h"

namespace avf::plan {

namespace {

using diag::DiagId;

auto Bytes(double b) -> std::string { return check::BytesText(b); }

auto Breakdown(const Candidate& c) -> std::string {
  const cost::MemoryBreakdown& m = c.prediction.memory;
  return fmt::format("per GPU: weights {} + gradients {} + optimizer state {} + activations {} + buffers {} = {} ({})",
                     Bytes(m.weights), Bytes(m.gradients), Bytes(m.optimizer), Bytes(m.activations), Bytes(m.buffers),
                     Bytes(m.total()), LayoutSummary(c.layout));
}

auto Suggestion(const Candidate& from, const Candidate& to) -> std::string {
  return fmt::format("use `{}`: {} per GPU, {:.4g} s per step", LayoutDifference(from.layout, to.layout),
                     Bytes(to.prediction.memory.total()), to.prediction.step_time);
}

void ReportNoFit(const check::JobSpec& job, const SearchResult& constrained, const SearchResult& full,
                 diag::DiagnosticEngine& diags) {
  const Candidate& smallest = *constrained.smallest;
  bool fixed = constrained.evaluated == 1;
  auto d = fixed ? diags.Report(DiagId::OutOfMemory, job.parallel.record_range, job.name,
                                Bytes(smallest.prediction.memory.total()), job.gpu_name, Bytes(job.hardware.gpu_memory))
                 : diags.Report(DiagId::NoLayoutFits, job.name_range, job.name, Bytes(job.hardware.gpu_memory),
                                job.gpu_name);
  d.Note(fixed ? Breakdown(smallest) : "the smallest layout needs " + Breakdown(smallest));
  // Prefer a fix that keeps every field the user wrote.
  SearchResult relaxed = Search(job, WrittenOnly(job.parallel), 1);
  if (!relaxed.best.empty()) {
    d.Help(Suggestion(smallest, relaxed.best.front()));
  } else if (!full.best.empty()) {
    d.Help(Suggestion(smallest, full.best.front()));
  } else {
    d.Help(fmt::format("no layout of {} GPUs fits; use more GPUs or a GPU with more memory", job.workload.gpus));
  }
}

// The written parallel fields, each with a way to set it back to `auto`.
auto FreeableFields(const check::ParallelChoices& c)
    -> std::vector<std::pair<std::string_view, std::function<void(check::ParallelChoices&)>>> {
  std::vector<std::pair<std::string_view, std::function<void(check::ParallelChoices&)>>> out;
  auto add_int = [&](std::string_view name, check::IntChoice check::ParallelChoices::*field) {
    if ((c.*field).written && (c.*field).value) out.emplace_back(name, [field](auto& p) { (p.*field).value.reset(); });
  };
  add_int("data", &check::ParallelChoices::data);
  add_int("tensor", &check::ParallelChoices::tensor);
  add_int("pipeline", &check::ParallelChoices::pipeline);
  add_int("virtual_stages", &check::ParallelChoices::virtual_stages);
  add_int("zero", &check::ParallelChoices::zero);
  add_int("micro_batch", &check::ParallelChoices::micro_batch);
  if (c.schedule.written && c.schedule.value) out.emplace_back("schedule", [](auto& p) { p.schedule.value.reset(); });
  return out;
}

void ReportNoValid(const check::JobSpec& job, const SearchResult& full, diag::DiagnosticEngine& diags) {
  auto d = diags.Report(DiagId::NoValidLayout, job.parallel.record_range, job.name);
  d.Note(fmt::format("{} GPUs, {} layers, {} heads ({} key/value), global batch {}, {} GPUs per node",
                     job.workload.gpus, job.workload.model.layers, job.workload.model.heads,
                     job.workload.model.kv_heads, job.workload.global_batch, job.hardware.gpus_per_node));
  ExplainBlockingBatch(job, d);
  // Name the written fields that, left to the planner, would admit a layout.
  std::vector<std::string> culprits;
  for (const auto& [name, free] : FreeableFields(job.parallel)) {
    check::ParallelChoices relaxed = job.parallel;
    free(relaxed);
    SearchResult r = Search(job, relaxed, 1);
    if (!r.best.empty()) {
      culprits.push_back(
          fmt::format("`{}` (the planner would choose `{}`)", name, LayoutSummary(r.best.front().layout)));
    }
  }
  if (!culprits.empty()) {
    std::string list = culprits[0];
    for (size_t i = 1; i < culprits.size(); ++i) list += "; or " + culprits[i];
    d.Help("no layout satisfies every fixed field together; set to `auto`: " + list);
  } else if (!full.best.empty()) {
    d.Help("with every parallel field `auto` the planner chooses `" + LayoutSummary(full.best.front().layout) + "`");
  }
}

// The smallest deeper pipeline whose data-parallel rings all stay in a leaf.
auto PipelineForOneLeaf(const check::JobSpec& job, const cost::Layout& l) -> int64_t {
  int64_t gpus = job.workload.gpus;
  for (int64_t p = l.pipeline + 1; p <= gpus / l.tensor; ++p) {
    if (gpus % (l.tensor * p) != 0 || p > job.workload.model.layers) continue;
    cost::Layout deeper = l;
    deeper.pipeline = p;
    deeper.data = gpus / (l.tensor * p);
    if (job.workload.global_batch % deeper.data != 0) continue;
    if (cost::DataSpan(deeper, job.hardware).leaves == 1) return p;
  }
  return 0;
}

void CheckPlacement(const check::JobSpec& job, const Candidate& c, diag::DiagnosticEngine& diags) {
  const cost::Hardware& hw = job.hardware;
  const cost::GroupSpan& span = c.prediction.data_span;
  if (span.leaves <= 1 || hw.oversubscription <= 1) return;
  auto d = diags.Report(DiagId::CrossSpineAllReduce, job.at.topology, job.name, span.leaves,
                        fmt::format("{:g}", hw.oversubscription));
  d.Note(fmt::format("each data-parallel group has {} ranks on {} nodes; a leaf switch holds {} nodes", c.layout.data,
                     span.nodes, hw.nodes_per_leaf));
  if (int64_t p = PipelineForOneLeaf(job, c.layout); p > 0) {
    d.Help(fmt::format("use `pipeline = {}` so that each data-parallel ring stays inside one leaf", p));
  } else {
    d.Note(
        fmt::format("no pipeline depth keeps a data-parallel ring inside one leaf of {} GPUs; the predicted step "
                    "time includes the oversubscribed bandwidth",
                    hw.nodes_per_leaf * hw.gpus_per_node));
  }
}

auto IsAllAuto(const check::ParallelChoices& c) -> bool {
  for (const check::IntChoice* i : {&c.data, &c.tensor, &c.pipeline, &c.virtual_stages, &c.zero, &c.micro_batch}) {
    if (i->value) return false;
  }
  return !c.schedule.value && !c.recompute.value && !c.sequence_parallel.value;
}

void FillFigures(Plan& plan) {
  const cost::Workload& w = plan.job.workload;
  Figures& f = plan.figures;
  f.parameters = cost::CountParams(w.model).total;
  f.flops_per_token = cost::ModelFlopsPerToken(w.model);
  f.micro_batches_per_step = cost::MicroBatches(w, plan.chosen.layout);
  f.tokens_per_step = w.global_batch * w.model.seq_len;
}

void FillTotals(Plan& plan) {
  const check::JobSpec& job = plan.job;
  const cost::Prediction& p = plan.chosen.prediction;
  Totals& t = plan.totals;
  auto steps = static_cast<double>(job.steps);
  t.steps = job.steps;
  t.tokens = steps * static_cast<double>(job.workload.global_batch) * static_cast<double>(job.workload.model.seq_len);
  t.step_seconds = steps * p.step_time;
  t.staging = EstimateStaging(job, plan.nodes_used);
  t.checkpoints = EstimateCheckpoints(job, plan.figures.parameters, t.step_seconds);
  double overheads = (t.staging ? t.staging->seconds : 0) + (t.checkpoints ? t.checkpoints->seconds : 0);
  t.seconds = t.step_seconds + overheads;
  t.seconds_low = steps * p.step_time_low + overheads;
  t.seconds_high = steps * p.step_time_high + overheads;
  t.gpu_hours = t.seconds / 3600.0 * static_cast<double>(job.workload.gpus);
  if (job.price_per_gpu_hour) t.cost = t.gpu_hours * *job.price_per_gpu_hour;
  t.currency = job.currency;
}

// Up to `wanted` layouts of `best` (fastest first) other than the chosen one,
// each not tied with the chosen one or with one taken before it.
auto DistinctAlternatives(const Candidate& chosen, const std::vector<Candidate>& best, size_t wanted, int64_t& tied)
    -> std::vector<Candidate> {
  std::vector<Candidate> out;
  tied = 0;
  for (const Candidate& c : best) {
    if (out.size() == wanted) break;
    if (c.layout == chosen.layout) continue;
    bool repeats =
        TiedWith(c, chosen) || std::any_of(out.begin(), out.end(), [&](const Candidate& o) { return TiedWith(c, o); });
    if (repeats) ++tied;
    else out.push_back(c);
  }
  return out;
}

// The alternatives and the runner-up from the whole space; `full` holds its
// `keep` fastest layouts. Ties take room, so the search runs again keeping
// more until enough distinct layouts are found or the space has no more.
void FillAlternatives(Plan& plan, const check::ParallelChoices& whole, SearchResult full, size_t keep, size_t wanted) {
  size_t needed = std::max<size_t>(wanted, 1);
  std::vector<Candidate> distinct = DistinctAlternatives(plan.chosen, full.best, needed, plan.tied_left_out);
  while (distinct.size() < needed && full.best.size() == keep && keep > 0) {
    keep *= 4;
    full = Search(plan.job, whole, keep);
    distinct = DistinctAlternatives(plan.chosen, full.best, needed, plan.tied_left_out);
  }
  plan.candidates_evaluated = full.evaluated;
  if (!distinct.empty()) plan.runner_up = distinct.front();
  distinct.resize(std::min(distinct.size(), wanted));
  plan.alternatives = std::move(distinct);
}

}  // namespace

auto LayoutSummary(const cost::Layout& l) -> std::string {
  std::string s = fmt::format("tensor {}, pipeline {}, data {}", l.tensor, l.pipeline, l.data);
  if (l.schedule == cost::Schedule::Interleaved) s += fmt::format(", interleaved x {}", l.virtual_stages);
  if (l.schedule == cost::Schedule::GPipe) s += ", gpipe";
  s += fmt::format(", zero {}, micro-batch {}, recompute {}", l.zero, l.micro_batch, cost::Name(l.recompute));
  if (l.sequence_parallel) s += ", sequence parallel";
  return s;
}

auto TiedWith(const Candidate& a, const Candidate& b) -> bool {
  auto same = [](double x, double y) { return std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y)); };
  return same(a.prediction.step_time, b.prediction.step_time) &&
         same(a.prediction.memory.total(), b.prediction.memory.total());
}

auto LayoutDifference(const cost::Layout& from, const cost::Layout& to) -> std::string {
  std::vector<std::string> parts;
  auto num = [&](std::string_view name, int64_t a, int64_t b) {
    if (a != b) parts.push_back(fmt::format("{} = {}", name, b));
  };
  num("tensor", from.tensor, to.tensor);
  num("pipeline", from.pipeline, to.pipeline);
  if (from.schedule != to.schedule) parts.push_back(fmt::format("schedule = {}", cost::Name(to.schedule)));
  num("virtual_stages", from.virtual_stages, to.virtual_stages);
  num("zero", from.zero, to.zero);
  num("micro_batch", from.micro_batch, to.micro_batch);
  if (from.recompute != to.recompute) parts.push_back(fmt::format("recompute = {}", cost::Name(to.recompute)));
  if (from.sequence_parallel != to.sequence_parallel)
    parts.push_back(fmt::format("sequence_parallel = {}", to.sequence_parallel));
  if (parts.empty()) return "";
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) out += "; " + parts[i];
  return out;
}

// Where a trainer's limit points: the field at fault as written, else the
// trainer's kind.
auto LimitRange(const check::JobSpec& job, const std::string& field) -> std::pair<llvm::SMRange, bool> {
  const check::ParallelChoices& p = job.parallel;
  const std::pair<std::string_view, const check::IntChoice*> ints[] = {
      {"data", &p.data},         {"tensor", &p.tensor},
      {"pipeline", &p.pipeline}, {"virtual_stages", &p.virtual_stages},
      {"zero", &p.zero},         {"micro_batch", &p.micro_batch}};
  for (const auto& [name, choice] : ints) {
    if (field == name && choice->written) return {choice->range, true};
  }
  if (field == "schedule" && p.schedule.written) return {p.schedule.range, true};
  if (field == "recompute" && p.recompute.written) return {p.recompute.range, true};
  if (field == "sequence_parallel" && p.sequence_parallel.written) return {p.sequence_parallel.range, true};
  // Written when the range is not the job's name, which stands for a default.
  auto written = [&](llvm::SMRange r) { return r.Start != job.name_range.Start; };
  if (field == "attention" && written(job.at.attention)) return {job.at.attention, true};
  if (field == "precision" && written(job.at.precision)) return {job.at.precision, true};
  if (field == "model") return {job.at.model, false};
  if (field == "encrypt") return {job.at.encrypt, false};
  if (field == "validation") return {job.at.validation_data, false};
  if (field == "init") return {job.at.init, false};
  if (field == "stage_to") return {job.at.stage_to, false};
  if (field == "keep") return {job.at.checkpoint_keep, false};
  return {job.trainer.kind_range, false};
}

// E0731: the job, or the best layout it allows, is one its trainer cannot run.
void ReportUntrainable(const check::JobSpec& job, const trainers::Limit& limit, diag::DiagnosticEngine& diags) {
  check::TrainerKind kind = job.trainer.kind;
  auto [range, at_field] = LimitRange(job, limit.field);
  auto d = diags.Report(DiagId::TrainerCannotExpress, range, check::Name(kind), trainers::PinnedVersion(kind),
                        limit.what, limit.why);
  if (range.Start != job.trainer.kind_range.Start) {
    d.Note(job.trainer.kind_range, fmt::format("the job runs {} here", check::Name(kind)));
  }
  if (limit.fix.empty()) {
    d.Help(fmt::format("train this job with avf-run (remove `trainer`), or change `{}`", limit.field));
    return;
  }
  d.Help(fmt::format("write `{}`", limit.fix));
  std::string prefix = limit.field + " = ";
  if (at_field && limit.fix.rfind(prefix, 0) == 0) d.Fix(range, limit.fix.substr(prefix.size()));
}

// E0730: a `version` other than the one the translation is written for.
auto CheckTrainerVersion(const check::JobSpec& job, diag::DiagnosticEngine& diags) -> bool {
  const check::TrainerSpec& t = job.trainer;
  std::string_view pinned = trainers::PinnedVersion(t.kind);
  if (t.version.value.empty() || t.version.value == pinned) return true;
  diags.Report(DiagId::TrainerVersionUnknown, t.version.range, check::Name(t.kind), pinned, t.version.value)
      .Help(fmt::format("write `version = \"{}\"`, or leave `version` out", pinned))
      .Fix(t.version.range, fmt::format("\"{}\"", pinned));
  return false;
}

auto PlanJob(const check::JobSpec& written, const PlanOptions& options, diag::DiagnosticEngine& diags)
    -> std::optional<Plan> {
  if (!CheckTrainerVersion(written, diags)) return std::nullopt;
  // Predicted as the trainer runs it (its reductions' precision).
  check::JobSpec job = written;
  job.workload = trainers::AsRunBy(job.trainer.kind, job.workload);
  if (auto limit = trainers::JobLimit(job)) {
    ReportUntrainable(job, *limit, diags);
    return std::nullopt;
  }
  // The chosen layout, the runner-up and the alternatives, each of which
  // may be tied with the one before.
  size_t keep = 2 * (options.alternatives + 2);
  bool all_auto = IsAllAuto(job.parallel);
  SearchResult constrained = Search(job, job.parallel, all_auto ? keep : 1);
  // With every field `auto` the constrained search is the whole space.
  auto whole_space = [&] { return all_auto ? constrained : Search(job, AllAuto(job.parallel), keep); };
  const std::optional<Untrainable>& untrainable = constrained.untrainable;
  if (constrained.best.empty() && untrainable &&
      (untrainable->candidate.prediction.fits || constrained.evaluated == 0)) {
    ReportUntrainable(job, untrainable->limit, diags);
    return std::nullopt;
  }
  if (constrained.evaluated == 0) {
    ReportNoValid(job, whole_space(), diags);
    return std::nullopt;
  }
  if (constrained.best.empty()) {
    ReportNoFit(job, constrained, whole_space(), diags);
    return std::nullopt;
  }
  Plan plan;
  plan.job = job;
  plan.chosen = constrained.best.front();
  if (options.whole_space) FillAlternatives(plan, AllAuto(job.parallel), whole_space(), keep, options.alternatives);
  AdviseBatch(job, plan.chosen, diags);
  CheckPlacement(job, plan.chosen, diags);
  int64_t per_node = std::max<int64_t>(job.hardware.gpus_per_node, 1);
  plan.nodes_used = plan_format::NodesFor(job.workload.gpus, per_node);
  plan.ranks_per_node = plan_format::RanksPerNode(job.workload.gpus, per_node);
  int64_t per_leaf = job.hardware.nodes_per_leaf;
  plan.leaves_used = per_leaf > 0 ? (plan.nodes_used + per_leaf - 1) / per_leaf : 1;
  if (options.tables) BuildTables(plan);
  FillFigures(plan);
  FillTotals(plan);
  if (job.elastic) {
    plan.elastic = PlanElastic(plan, diags);
    if (!plan.elastic) return std::nullopt;
  }
  return plan;
}

}  // namespace avf::plan
