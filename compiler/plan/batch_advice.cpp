#include "plan/batch_advice.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "plan/planner.h"
#include "plan/search.h"

namespace avf::plan {

namespace {

using diag::DiagId;

// The best layout of the job's fixed fields at another global batch.
struct BatchOption {
  int64_t batch = 0;
  SearchResult result;
};

auto DivisorsOf(int64_t n) -> std::vector<int64_t> {
  std::vector<int64_t> out;
  for (int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    out.push_back(i);
    if (i != n / i) out.push_back(n / i);
  }
  return out;
}

// The batches that the data degrees the job's batch rules out divide: for
// each data degree d of the GPUs (only the fixed one when `data` is written)
// that does not divide the batch times the micro-batch m (1 unless fixed),
// the multiples of d·m just below and just above it, kept within a quarter
// of the batch so that the job stays the same job. Nearest first.
auto NearbyBatches(const check::JobSpec& job) -> std::vector<int64_t> {
  const check::ParallelChoices& p = job.parallel;
  int64_t batch = job.workload.global_batch;
  int64_t micro = p.micro_batch.value.value_or(1);
  std::vector<int64_t> out;
  for (int64_t d : DivisorsOf(job.workload.gpus)) {
    if (p.data.value && *p.data.value != d) continue;
    int64_t step = d * micro;
    if (batch % step == 0) continue;
    int64_t below = batch / step * step;
    for (int64_t b : {below, below + step}) {
      if (b > 0 && 4 * std::llabs(b - batch) <= batch) out.push_back(b);
    }
  }
  std::sort(out.begin(), out.end(), [&](int64_t a, int64_t b) {
    return std::make_pair(std::llabs(a - batch), a) < std::make_pair(std::llabs(b - batch), b);
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The job's fixed fields searched at each nearby batch that admits a layout
// (`fitting`: one that fits in memory).
auto SearchNearby(const check::JobSpec& job, bool fitting) -> std::vector<BatchOption> {
  std::vector<BatchOption> out;
  check::JobSpec at = job;
  for (int64_t batch : NearbyBatches(job)) {
    at.workload.global_batch = batch;
    SearchResult r = Search(at, at.parallel, 1);
    if (fitting ? !r.best.empty() : r.evaluated > 0) out.push_back({batch, std::move(r)});
  }
  return out;
}

auto PerToken(const Candidate& c, int64_t batch) -> double {
  return c.prediction.step_time / static_cast<double>(batch);
}

// The nearest option below the job's batch and the nearest above it (options
// are nearest first), as "`batch = 512` or `batch = 448`".
auto BatchChoices(const std::vector<const BatchOption*>& options, int64_t batch) -> std::string {
  const BatchOption* below = nullptr;
  const BatchOption* above = nullptr;
  for (const BatchOption* o : options) {
    if (o->batch < batch && !below) below = o;
    if (o->batch > batch && !above) above = o;
  }
  std::vector<int64_t> picked;
  for (const BatchOption* o : options) {
    if (o == below || o == above) picked.push_back(o->batch);
  }
  std::string out = fmt::format("`batch = {}`", picked.at(0));
  if (picked.size() > 1) out += fmt::format(" or `batch = {}`", picked[1]);
  return out;
}

auto SameDegrees(const cost::Layout& a, const cost::Layout& b) -> bool {
  return a.tensor == b.tensor && a.pipeline == b.pipeline && a.data == b.data;
}

auto MicroBatchText(const check::JobSpec& job) -> std::string {
  const check::IntChoice& m = job.parallel.micro_batch;
  return m.value && *m.value > 1 ? fmt::format(" x micro-batch {}", *m.value) : "";
}

}  // namespace

void AdviseBatch(const check::JobSpec& job, const Candidate& chosen, diag::DiagnosticEngine& diags) {
  int64_t batch = job.workload.global_batch;
  std::vector<BatchOption> options = SearchNearby(job, /*fitting=*/true);
  if (options.empty()) return;
  auto by_per_token = [](const BatchOption& a, const BatchOption& b) {
    return PerToken(a.result.best.front(), a.batch) < PerToken(b.result.best.front(), b.batch);
  };
  const BatchOption& fastest = *std::min_element(options.begin(), options.end(), by_per_token);
  const Candidate& faster = fastest.result.best.front();
  double best_per_token = PerToken(faster, fastest.batch);
  double slower = PerToken(chosen, batch) / best_per_token - 1;
  if (slower <= kBatchAdviceMargin) return;
  // The batches whose best layout has the fastest one's degrees and beats the
  // job's batch by the margin too.
  std::vector<const BatchOption*> allowing;
  for (const BatchOption& o : options) {
    const Candidate& best = o.result.best.front();
    if (SameDegrees(best.layout, faster.layout) &&
        PerToken(chosen, batch) / PerToken(best, o.batch) - 1 > kBatchAdviceMargin) {
      allowing.push_back(&o);
    }
  }
  auto d = diags.Report(DiagId::BatchForcesSlowerLayout, job.at.batch, batch, job.name, 100 * slower, fastest.batch);
  d.Note(fmt::format("batch {} allows at best `{}`: {:.4g} s per step", batch, LayoutSummary(chosen.layout),
                     chosen.prediction.step_time));
  d.Note(
      fmt::format("batch {} is not divisible by data parallelism {}{}; with batch {} the planner chooses `{}`: "
                  "{:.4g} s per step",
                  batch, faster.layout.data, MicroBatchText(job), fastest.batch, LayoutSummary(faster.layout),
                  faster.prediction.step_time));
  d.Help("use " + BatchChoices(allowing, batch));
}

void ExplainBlockingBatch(const check::JobSpec& job, diag::DiagnosticBuilder& d) {
  std::vector<BatchOption> options = SearchNearby(job, /*fitting=*/false);
  if (options.empty()) return;
  const check::IntChoice& data = job.parallel.data;
  int64_t degree = data.value ? *data.value : options.front().result.smallest->layout.data;
  std::vector<const BatchOption*> admitting;
  for (const BatchOption& o : options) admitting.push_back(&o);
  int64_t batch = job.workload.global_batch;
  d.Note(job.at.batch,
         fmt::format("global batch {} is not divisible by data parallelism {}{}", batch, degree, MicroBatchText(job)));
  d.Help("use " + BatchChoices(admitting, batch) + ": a layout satisfies every fixed field there");
}

}  // namespace avf::plan
