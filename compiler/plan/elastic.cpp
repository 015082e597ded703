#include "plan/elastic.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "check/check.h"
#include "cost/counts.h"
#include "cost/stages.h"
#include "plan/search.h"

namespace avf::plan {

namespace {

using diag::DiagId;

// Every step at `c`'s step time, plus the job's own overheads (staging,
// checkpoints).
auto SecondsToTrain(const Plan& plan, const Candidate& c) -> double {
  const Totals& own = plan.totals;
  return static_cast<double>(own.steps) * c.prediction.step_time + (own.seconds - own.step_seconds);
}

// "3 nodes", "9-11 or 13 nodes": runs of consecutive counts, the first
// few of them, then how many counts more.
auto CountList(const std::vector<int64_t>& counts) -> std::string {
  constexpr size_t kRunsShown = 6;
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (int64_t n : counts) {
    if (!runs.empty() && runs.back().second + 1 == n) runs.back().second = n;
    else runs.emplace_back(n, n);
  }
  std::string out;
  size_t shown = std::min(runs.size(), kRunsShown);
  int64_t listed = 0;
  for (size_t i = 0; i < shown; ++i) {
    auto [first, last] = runs[i];
    if (i > 0) out += i + 1 == shown && shown == runs.size() ? " or " : ", ";
    out += first == last ? std::to_string(first) : fmt::format("{}-{}", first, last);
    listed += last - first + 1;
  }
  auto rest = static_cast<int64_t>(counts.size()) - listed;
  if (rest > 0) out += fmt::format(" and {} other counts of", rest);
  return out + (counts.size() == 1 && counts[0] == 1 ? " node" : " nodes");
}

// Why the search at a count found nothing: its fixed fields and the batch
// leave no layout, or none fits in memory.
auto WhyNone(const check::JobSpec& job, const SearchResult& r) -> std::string {
  if (r.evaluated == 0) {
    return fmt::format("no layout of its fixed parallel fields divides its batch of {} sequences among the GPUs",
                       job.workload.global_batch);
  }
  return fmt::format("no layout fits in the {} of one `{}`", check::BytesText(job.hardware.gpu_memory), job.gpu_name);
}

// The layout at `nodes` nodes, with its stages' layers and parameters.
auto Member(const check::JobSpec& job, int64_t nodes, int64_t gpus, const Candidate& c, double seconds)
    -> ElasticLayout {
  const cost::Layout& l = c.layout;
  const cost::ModelShape& m = job.workload.model;
  int64_t chunks = cost::ChunksPerStage(l);
  return {
      nodes, gpus, c, seconds, cost::ChunkLayerCounts(m.layers, l.pipeline * chunks), cost::StageParamsOfLayout(m, l)};
}

}  // namespace

auto PlanElastic(const Plan& plan, diag::DiagnosticEngine& diags) -> std::optional<ElasticFamily> {
  const check::JobSpec& job = plan.job;
  const check::ElasticSpec& spec = *job.elastic;
  int64_t own = check::OwnNodes(job);
  ElasticFamily family{spec.min_nodes, check::MostNodes(job), {}};
  // The counts without a layout, by the reason.
  std::map<std::string, std::vector<int64_t>> missing;
  for (int64_t nodes = family.min_nodes; nodes <= family.max_nodes; ++nodes) {
    if (nodes == own) {
      family.layouts.push_back(Member(job, own, job.workload.gpus, plan.chosen, plan.totals.seconds));
      continue;
    }
    check::JobSpec at_count = job;
    at_count.workload.gpus = nodes * std::max<int64_t>(job.hardware.gpus_per_node, 1);
    check::ParallelChoices choices = job.parallel;
    choices.data.value.reset();
    SearchResult r = Search(at_count, choices, 1);
    if (r.best.empty()) {
      missing[WhyNone(at_count, r)].push_back(nodes);
      continue;
    }
    const Candidate& c = r.best.front();
    family.layouts.push_back(Member(job, nodes, at_count.workload.gpus, c, SecondsToTrain(plan, c)));
  }
  if (family.layouts.size() == 1) {
    auto d = diags.Report(DiagId::ElasticOnlyOwnCount, spec.range, job.name, family.min_nodes, family.max_nodes, own);
    for (const auto& [why, counts] : missing) d.Note(spec.range, fmt::format("{}: {}", CountList(counts), why));
    d.Help(
        "an elastic job keeps its global batch: choose a batch that the data-parallel degree of fewer nodes "
        "divides, or leave `tensor`, `pipeline` and `micro_batch` to `auto`");
    return std::nullopt;
  }
  for (const auto& [why, counts] : missing) {
    diags.Report(DiagId::ElasticCountsWithoutLayout, spec.range, job.name, CountList(counts), why);
  }
  return family;
}

}  // namespace avf::plan
