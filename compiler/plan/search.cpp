#include "plan/search.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

namespace avf::plan {

namespace {

using check::IntChoice;

// Bounds on what `auto` tries (a written value may exceed them). Megatron's
// own configurations use at most a handful of model chunks per stage, and
// beyond 64 sequences per micro-batch the model predicts no further gain;
// the bounds keep the search fast even for GPU counts with many divisors.
constexpr int64_t kMaxAutoVirtualStages = 8;
constexpr int64_t kMaxAutoMicroBatch = 64;

auto UpTo(std::vector<int64_t> values, int64_t limit) -> std::vector<int64_t> {
  values.erase(std::remove_if(values.begin(), values.end(), [&](int64_t v) { return v > limit; }), values.end());
  return values;
}

// 1, 2, ..., n.
auto OneTo(int64_t n) -> std::vector<int64_t> {
  std::vector<int64_t> values;
  for (int64_t i = 1; i <= n; ++i) values.push_back(i);
  return values;
}

auto Divisors(int64_t n) -> std::vector<int64_t> {
  std::vector<int64_t> low, high;
  for (int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    low.push_back(i);
    if (i != n / i) high.push_back(n / i);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// The fixed value, or every value of `domain`.
auto Domain(const IntChoice& c, std::vector<int64_t> domain) -> std::vector<int64_t> {
  if (!c.value) return domain;
  return std::find(domain.begin(), domain.end(), *c.value) != domain.end() ? std::vector<int64_t>{*c.value}
                                                                           : std::vector<int64_t>{};
}

template <typename T>
auto EnumDomain(const check::EnumChoice<T>& c, std::vector<T> all) -> std::vector<T> {
  return c.value ? std::vector<T>{*c.value} : all;
}

auto Key(const Candidate& c) {
  const cost::Layout& l = c.layout;
  return std::make_tuple(l.tensor, l.pipeline, l.virtual_stages, l.zero, l.micro_batch, static_cast<int>(l.recompute),
                         l.sequence_parallel, static_cast<int>(l.schedule));
}

// Keeps the `keep` best fitting candidates and the least-memory one.
class Collector {
 public:
  explicit Collector(size_t keep) : keep_(keep) {}
  void Add(Candidate c) {
    ++result_.evaluated;
    double mem = c.prediction.memory.total();
    if (!result_.smallest || mem < result_.smallest->prediction.memory.total() ||
        (mem == result_.smallest->prediction.memory.total() && Better(c, *result_.smallest))) {
      result_.smallest = c;
    }
    if (!c.prediction.fits || keep_ == 0) return;
    auto& best = result_.best;
    if (best.size() == keep_ && !Better(c, best.back())) return;
    best.insert(std::upper_bound(best.begin(), best.end(), c, Better), std::move(c));
    if (best.size() > keep_) best.pop_back();
  }
  void Exclude(Candidate c, trainers::Limit limit) {
    const std::optional<Untrainable>& u = result_.untrainable;
    bool better = !u || (c.prediction.fits && !u->candidate.prediction.fits) ||
                  (c.prediction.fits == u->candidate.prediction.fits && Better(c, u->candidate));
    if (better) result_.untrainable = Untrainable{std::move(c), std::move(limit)};
  }
  auto Take() -> SearchResult { return std::move(result_); }

 private:
  size_t keep_;
  SearchResult result_;
};

struct Space {
  const check::JobSpec& job;
  const check::ParallelChoices& choices;
  Collector& out;
};

void EnumerateInner(Space& s, cost::Layout l) {
  const cost::Workload& w = s.job.workload;
  int64_t per_rank = w.global_batch / l.data;
  std::vector<int64_t> sizes =
      s.choices.micro_batch.value ? Divisors(per_rank) : UpTo(Divisors(per_rank), kMaxAutoMicroBatch);
  for (int64_t mb : Domain(s.choices.micro_batch, sizes)) {
    l.micro_batch = mb;
    int64_t micro_batches = per_rank / mb;
    if (l.schedule == cost::Schedule::Interleaved && micro_batches % l.pipeline != 0) continue;
    // ZeRO over one data rank shards nothing: searched only when written.
    bool shards = l.data > 1 || s.choices.zero.value;
    for (int64_t zero : Domain(s.choices.zero, shards ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{0})) {
      l.zero = static_cast<int>(zero);
      for (cost::Recompute rc : EnumDomain(
               s.choices.recompute, {cost::Recompute::None, cost::Recompute::Selective, cost::Recompute::Full})) {
        l.recompute = rc;
        std::vector<bool> sp_domain = l.tensor > 1 || s.choices.sequence_parallel.value ? std::vector<bool>{false, true}
                                                                                        : std::vector<bool>{false};
        for (bool sp : EnumDomain(s.choices.sequence_parallel, sp_domain)) {
          l.sequence_parallel = sp;
          Candidate c{l, cost::Predict(trainers::AsRunBy(s.job.trainer.kind, w, l), l, s.job.hardware), ""};
          if (auto limit = trainers::LimitOf(s.job.trainer.kind, l, w)) {
            s.out.Exclude(std::move(c), std::move(*limit));
          } else {
            s.out.Add(std::move(c));
          }
        }
      }
    }
  }
}

// Schedules and virtual stages for a pipeline of `l.pipeline` stages. Any
// chunk count up to one layer per chunk splits (cost/stages.h).
void EnumerateSchedules(Space& s, cost::Layout l) {
  int64_t most_chunks_per_stage = s.job.workload.model.layers / l.pipeline;
  std::vector<cost::Schedule> schedules =
      l.pipeline > 1
          ? std::vector<cost::Schedule>{cost::Schedule::OneFOneB, cost::Schedule::Interleaved, cost::Schedule::GPipe}
          : std::vector<cost::Schedule>{cost::Schedule::OneFOneB};
  for (cost::Schedule schedule : EnumDomain(s.choices.schedule, schedules)) {
    l.schedule = schedule;
    std::vector<int64_t> chunks{1};
    if (schedule == cost::Schedule::Interleaved && l.pipeline > 1) {
      chunks = OneTo(most_chunks_per_stage);
      if (!s.choices.virtual_stages.value) {
        chunks = UpTo(chunks, kMaxAutoVirtualStages);
        chunks.erase(chunks.begin());  // v = 1 is plain 1F1B
      }
    }
    for (int64_t v : Domain(s.choices.virtual_stages, chunks)) {
      l.virtual_stages = v;
      EnumerateInner(s, l);
    }
  }
}

}  // namespace

auto Better(const Candidate& a, const Candidate& b) -> bool {
  if (a.prediction.step_time != b.prediction.step_time) return a.prediction.step_time < b.prediction.step_time;
  double ma = a.prediction.memory.total(), mb = b.prediction.memory.total();
  if (ma != mb) return ma < mb;
  return Key(a) < Key(b);
}

auto AllAuto(const check::ParallelChoices& choices) -> check::ParallelChoices {
  check::ParallelChoices all = choices;
  for (IntChoice* c : {&all.data, &all.tensor, &all.pipeline, &all.virtual_stages, &all.zero, &all.micro_batch}) {
    c->value.reset();
  }
  all.schedule.value.reset();
  all.recompute.value.reset();
  all.sequence_parallel.value.reset();
  return all;
}

auto WrittenOnly(const check::ParallelChoices& choices) -> check::ParallelChoices {
  check::ParallelChoices out = choices;
  for (IntChoice* c : {&out.data, &out.tensor, &out.pipeline, &out.virtual_stages, &out.zero, &out.micro_batch}) {
    if (!c->written) c->value.reset();
  }
  if (!out.schedule.written) out.schedule.value.reset();
  if (!out.recompute.written) out.recompute.value.reset();
  if (!out.sequence_parallel.written) out.sequence_parallel.value.reset();
  return out;
}

auto Search(const check::JobSpec& job, const check::ParallelChoices& choices, size_t keep) -> SearchResult {
  Collector out(keep);
  Space space{job, choices, out};
  const cost::ModelShape& m = job.workload.model;
  int64_t gpus = job.workload.gpus;
  std::vector<int64_t> tensors;
  for (int64_t t : Divisors(std::max<int64_t>(job.hardware.gpus_per_node, 1))) {
    if (gpus % t == 0 && m.heads % t == 0 && m.kv_heads % t == 0) tensors.push_back(t);
  }
  for (int64_t t : Domain(choices.tensor, tensors)) {
    for (int64_t p : Domain(choices.pipeline, Divisors(gpus / t))) {
      if (p > m.layers) continue;  // every stage needs a layer; uneven splits are fine
      int64_t d = gpus / (t * p);
      if (choices.data.value && *choices.data.value != d) continue;
      if (job.workload.global_batch % d != 0) continue;
      cost::Layout l;
      l.tensor = t;
      l.pipeline = p;
      l.data = d;
      EnumerateSchedules(space, l);
    }
  }
  SearchResult result = out.Take();
  for (Candidate& c : result.best) c.binding = Describe(c, job.hardware);
  if (result.smallest) result.smallest->binding = Describe(*result.smallest, job.hardware);
  return result;
}

auto Describe(const Candidate& c, const cost::Hardware& hw) -> std::string {
  const cost::Prediction& p = c.prediction;
  double used = hw.gpu_memory > 0 ? p.memory.total() / hw.gpu_memory : 0;
  if (!p.fits) return fmt::format("memory {:.0f}%", 100 * used);
  const cost::TimeBreakdown& t = p.time;
  double step = p.step_time > 0 ? p.step_time : 1;
  std::pair<double, std::string_view> causes[] = {{t.bubble, "pipeline bubble"},
                                                  {t.tensor_comm, "tensor comm"},
                                                  {t.data_comm, "data comm"},
                                                  {t.pipeline_comm, "pipeline comm"},
                                                  {t.optimizer, "optimizer step"}};
  auto worst = std::max_element(std::begin(causes), std::end(causes),
                                [](const auto& a, const auto& b) { return a.first < b.first; });
  if (used >= 0.9) return fmt::format("memory {:.0f}%", 100 * used);
  if (worst->first / step >= 0.1) return fmt::format("{} {:.0f}%", worst->second, 100 * worst->first / step);
  return "compute";
}

}  // namespace avf::plan
