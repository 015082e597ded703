// The equivalence matrix: a plan's ranks, as forked processes on the CPU
// backend, train the tiny model for a few steps to the same losses (within
// 1e-5 relative, every step) and the same final parameters (within 1e-2 x the
// learning rate: a hundredth of the largest change one AdamW step makes) as
// one rank running the same global batches:
// data, tensor (with and without sequence parallelism) and pipeline
// parallelism (1F1B, interleaved, GPipe), ZeRO 0 to 3, 1, 2 and 4
// micro-batches, GPT-2 and Llama, up to 8 ranks. Every rank computes the
// one-rank reference itself and compares its own shard with it.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "forked_ranks.h"
#include "parallel/engine.h"
#include "plan_builder.h"

namespace avf::parallel {
namespace {

using testing::PlanShape;

constexpr int kSteps = 3;

auto Tiny(model::Arch arch, int64_t layers = 4) -> model::ModelConfig {
  return {arch, layers, 16, 4, arch == model::Arch::Llama ? 2 : 4, 32, 32, 8, arch == model::Arch::Gpt2, 10000.0};
}

auto Optimizer() -> optim::OptimizerConfig {
  optim::OptimizerConfig c;
  c.lr = 1e-2, c.weight_decay = 0.1, c.warmup = 1, c.total_steps = kSteps, c.clip_norm = 1.0;
  // Adam moves an element by about lr x g / (|g| + eps): with the default
  // eps (1e-8) the float noise of a gradient near 1e-8 (reduction order,
  // which differs between layouts) becomes a visible fraction of a step.
  // 1e-6 keeps such elements' updates proportional to their gradients.
  c.eps = 1e-6;
  return c;
}

// Data rank d's micro-batch m of step `step`: the same tokens whoever asks.
auto MicroBatch(const PlanShape& s, int64_t step, int64_t d, int64_t m) -> data::Batch {
  data::Batch b;
  int64_t n = s.micro_batch * s.model.seq_len;
  uint64_t key = (static_cast<uint64_t>(step) * 131 + static_cast<uint64_t>(d)) * 131 + static_cast<uint64_t>(m);
  for (int64_t i = 0; i < n + 1; ++i) {
    uint64_t x = (key * 2654435761u + static_cast<uint64_t>(i) * 40503u) ^ (key >> 3);
    uint32_t token = static_cast<uint32_t>((x >> 7) % static_cast<uint64_t>(s.model.vocab));
    if (i < n) b.inputs.push_back(token);
    if (i > 0) b.targets.push_back(token);
  }
  return b;
}

// The plan `s` run by `world` ranks, checked once as avf-run does.
auto Runnable(const PlanShape& s, int world) -> llvm::Expected<RunnablePlan> {
  return CheckRunnable(testing::MakeValidPlan(s), world);
}

auto ErrorText(llvm::Expected<RunnablePlan> plan) -> std::string {
  return plan ? "runnable" : llvm::toString(plan.takeError());
}

// What this runtime cannot run is refused once (CheckRunnable), before any
// rank connects; nothing below checks the plan again.
TEST(Runnable, RefusesWhatThisRuntimeCannotRun) {
  PlanShape s{.pipeline = 2, .micro_batches = 2, .model = Tiny(model::Arch::Gpt2)};
  EXPECT_EQ(ErrorText(Runnable(s, 2)), "runnable");
  EXPECT_EQ(ErrorText(Runnable(s, 3)), "plan.json has 2 ranks but 3 are running");
  EXPECT_EQ(ErrorText(Runnable(s, 1)), "plan.json has 2 ranks but 1 is running");
  // A bf16 plan trained in fp32 would be another run than the plan's.
  runtime::RunPlan bf16 = testing::MakePlan(s);
  bf16.training.precision = runtime::Precision::Bf16;
  EXPECT_EQ(ErrorText(CheckRunnable(testing::MustBeValid(bf16), 2)),
            "this avf-run trains in fp32 only; the plan asks for bf16: compile the job with `precision = fp32` to "
            "train it here");
  runtime::RunPlan sgd = testing::MakePlan(s);
  sgd.optimizer.kind = runtime::OptimizerKind::Sgd;
  EXPECT_EQ(ErrorText(CheckRunnable(testing::MustBeValid(sgd), 2)),
            "this avf-run trains with AdamW only; the plan asks for sgd");
  // Consistent plans this runtime does not cut (it pads nothing).
  PlanShape t2{.tensor = 2, .micro_batches = 2, .model = Tiny(model::Arch::Gpt2)};
  runtime::RunPlan wide = testing::MakePlan(t2);
  wide.model.ffn = 33;
  EXPECT_EQ(ErrorText(CheckRunnable(testing::MustBeValid(wide), 2)),
            "plan.json: the model's ffn = 33 does not divide by tensor = 2: each tensor rank needs an equal share "
            "(choose a ffn that is a multiple of 2)");
  wide = testing::MakePlan(t2);
  wide.model.vocab = 33;
  EXPECT_EQ(ErrorText(CheckRunnable(testing::MustBeValid(wide), 2)),
            "plan.json: the model's vocab = 33 does not divide by tensor = 2: each tensor rank needs an equal share "
            "(choose a vocab that is a multiple of 2); this avf-run does not pad the vocabulary");
  wide = testing::MakePlan(t2);
  wide.layout.sequence_parallel = true, wide.model.seq_len = 9;
  wide.training.tokens_per_step = wide.training.global_batch * 9;
  EXPECT_EQ(ErrorText(CheckRunnable(testing::MustBeValid(wide), 2)),
            "plan.json: sequence parallelism cuts a micro-batch's rows (micro_batch x seq_len = 1 x 9) into tensor "
            "= 2 equal parts; they do not divide");
  runtime::RunPlan other = testing::MakePlan(s);
  int64_t held = other.stage_parameters[1]++;
  EXPECT_EQ(
      ErrorText(CheckRunnable(testing::MustBeValid(other), 2)),
      fmt::format("plan.json gives stage 1 {} parameters per tensor rank, but its layers hold {}", held + 1, held));
}

struct Trained {
  std::vector<double> losses;
  std::optional<RunnablePlan> plan;  // what the engine was made from, kept while it lives
  std::unique_ptr<Engine> engine;
};

// One rank with every data rank's micro-batches of each step, in data-rank order.
auto Reference(const PlanShape& s) -> llvm::Expected<Trained> {
  PlanShape one = s;
  one.tensor = one.data = one.pipeline = one.chunks = 1, one.zero = 0, one.sequence_parallel = false;
  one.schedule = runtime::PipelineSchedule::OneFOneB;
  one.micro_batches = s.micro_batches * s.data;
  auto plan = Runnable(one, 1);
  if (!plan) return plan.takeError();
  Trained t{{}, std::move(*plan), nullptr};
  t.engine = Engine::Create({&*t.plan, 0, nullptr, nullptr, Optimizer(), 7});
  for (int64_t step = 0; step < kSteps; ++step) {
    std::vector<data::Batch> batches;
    for (int64_t d = 0; d < s.data; ++d) {
      for (int64_t m = 0; m < s.micro_batches; ++m) batches.push_back(MicroBatch(s, step, d, m));
    }
    auto r = t.engine->Step(batches, false);
    if (!r) return r.takeError();
    t.losses.push_back(r->loss);
  }
  return t;
}

// "" when the parameters this rank keeps (its shard, or at ZeRO 3 its slice
// of it) equal the reference's at their full index.
auto CompareParameters(Engine& mine, Engine& whole) -> std::string {
  const model::ParamLayout& full = whole.model().layout();
  std::map<std::string, const model::ParamTensor*> by_name;
  for (const model::ParamTensor& t : full.tensors) by_name[t.name] = &t;
  int64_t kept = mine.kept_parameter_count(),
          first = mine.kept_parameter_count() == mine.model().layout().total ? 0 : mine.optimizer().mine().first;
  double tolerance = 1e-2 * Optimizer().lr;
  for (const model::ParamTensor& t : mine.model().layout().tensors) {
    const model::ParamTensor& w = *by_name.at(t.name);
    const float* want = whole.model().parameters().data() + w.offset;
    double worst = 0;
    for (int64_t i = std::max<int64_t>(0, first - t.offset); i < t.size && t.offset + i < first + kept; ++i) {
      double got = mine.kept_parameters()[t.offset + i - first];
      worst = std::max(worst, std::abs(got - want[t.part.FullIndex(i)]));
    }
    // Data parallelism alone reorders only the sums over micro-batches and
    // ranks (parameters agree to ~1e-7); tensor parallelism also splits each
    // matmul's sum, and where a gradient is a small difference of large terms
    // the 1e-7 rounding becomes 1e-4 of that gradient, which Adam's ratio of
    // moments can turn into ~0.5% of a step after three steps.
    if (worst > tolerance)
      return fmt::format("{}: a parameter differs by {:.2e} (tolerance {:.0e})", t.name, worst, tolerance);
  }
  return "";
}

auto RunRank(const PlanShape& s, comm::Communicator& world) -> std::string {
  auto reference = Reference(s);
  if (!reference) return "reference: " + llvm::toString(reference.takeError());
  auto plan = Runnable(s, world.size());
  if (!plan) return "plan: " + llvm::toString(plan.takeError());
  auto groups = BuildGroups(world, plan->valid());
  if (!groups) return "groups: " + comm::testing::Text(groups.takeError());
  std::unique_ptr<Engine> engine = Engine::Create({&*plan, world.rank(), &world, &*groups, Optimizer(), 7});
  int64_t d = (*plan)->ranks[static_cast<size_t>(world.rank())].data;
  for (int64_t step = 0; step < kSteps; ++step) {
    std::vector<data::Batch> batches;
    for (int64_t m = 0; m < s.micro_batches; ++m) batches.push_back(MicroBatch(s, step, d, m));
    auto r = engine->Step(batches, false);
    if (!r) return fmt::format("step {}: {}", step + 1, llvm::toString(r.takeError()));
    double want = reference->losses[static_cast<size_t>(step)];
    if (std::abs(r->loss - want) > 1e-5 * std::abs(want)) {
      return fmt::format("step {}: loss {:.9f}, one rank {:.9f}", step + 1, r->loss, want);
    }
  }
  return CompareParameters(*engine, *reference->engine);
}

class Equivalence : public ::testing::TestWithParam<PlanShape> {};

TEST_P(Equivalence, MatchesOneRank) {
  const PlanShape& s = GetParam();
  int ranks = static_cast<int>(s.tensor * s.data * s.pipeline);
  comm::testing::ExpectAllOk(comm::testing::RunRanks(ranks, [&](comm::Communicator& w) { return RunRank(s, w); }));
}

using runtime::PipelineSchedule;
constexpr auto k1F1B = PipelineSchedule::OneFOneB;
constexpr auto kInterleaved = PipelineSchedule::Interleaved;
constexpr auto kGpipe = PipelineSchedule::Gpipe;

auto Shape(int64_t t, int64_t d, int64_t p, int64_t v, PipelineSchedule k, int64_t zero, int64_t m, bool sp,
           model::Arch arch = model::Arch::Gpt2, int64_t layers = 4) -> PlanShape {
  return {t, d, p, v, k, zero, 2, m, sp, Tiny(arch, layers)};
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, Equivalence,
    ::testing::Values(
        Shape(1, 2, 1, 1, k1F1B, 0, 1, false), Shape(1, 2, 1, 1, k1F1B, 1, 4, false),
        Shape(1, 4, 1, 1, k1F1B, 1, 1, false), Shape(2, 1, 1, 1, k1F1B, 0, 1, false),
        Shape(4, 1, 1, 1, k1F1B, 0, 4, false), Shape(2, 1, 1, 1, k1F1B, 0, 1, true),
        Shape(4, 1, 1, 1, k1F1B, 0, 1, true), Shape(1, 1, 2, 1, k1F1B, 0, 4, false),
        Shape(1, 1, 4, 1, k1F1B, 0, 4, false), Shape(1, 1, 2, 2, kInterleaved, 0, 4, false),
        Shape(1, 1, 2, 1, kGpipe, 0, 4, false), Shape(1, 1, 4, 2, kInterleaved, 0, 4, false, model::Arch::Gpt2, 8),
        Shape(2, 2, 2, 1, k1F1B, 1, 4, true), Shape(2, 1, 2, 2, kInterleaved, 0, 4, false, model::Arch::Llama),
        Shape(1, 2, 2, 1, k1F1B, 1, 4, false, model::Arch::Llama),
        Shape(2, 2, 1, 1, k1F1B, 0, 1, true, model::Arch::Llama), Shape(1, 2, 4, 1, k1F1B, 1, 1, false),
        Shape(2, 4, 1, 1, k1F1B, 1, 4, false), Shape(2, 4, 1, 1, k1F1B, 0, 4, false),
        Shape(1, 8, 1, 1, k1F1B, 1, 2, false), Shape(4, 2, 1, 1, k1F1B, 1, 1, true),
        Shape(2, 1, 4, 1, kGpipe, 0, 4, true), Shape(1, 1, 4, 1, k1F1B, 0, 1, false),
        Shape(1, 2, 1, 1, k1F1B, 2, 4, false), Shape(1, 4, 1, 1, k1F1B, 3, 2, false),
        Shape(2, 2, 1, 1, k1F1B, 2, 1, true), Shape(1, 2, 2, 1, k1F1B, 3, 4, false),
        Shape(2, 2, 2, 1, k1F1B, 3, 4, true), Shape(1, 2, 2, 2, kInterleaved, 2, 4, false, model::Arch::Llama),
        Shape(2, 2, 1, 1, k1F1B, 3, 4, false, model::Arch::Llama), Shape(1, 1, 2, 1, kGpipe, 3, 2, false)),
    [](const ::testing::TestParamInfo<PlanShape>& info) { return testing::ShapeName(info.param); });

}  // namespace
}  // namespace avf::parallel
