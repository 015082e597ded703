// The equivalence matrix: a plan's ranks, as forked processes on the CPU
// backend, train the tiny model for a few steps to the same losses (within
// 1e-5 relative, every step) and the same final parameters (within 1e-2 x the
// learning rate: a hundredth of the largest change one AdamW step makes) as
// one rank running the same global batches:
// data, tensor (with and without sequence parallelism) and pipeline
// parallelism (1F1B, interleaved, GPipe; stages of equal and unequal
// depth), ZeRO 0 to 3, 1, 2 and 4 micro-batches, GPT-2 and Llama, up to 8
// ranks. Every rank computes the
// one-rank reference itself and compares its own shard with it. The bf16
// rows hold the bf16 layouts to the one-rank bf16 run (bounds at
// Bf16Tolerance), and one test holds the one-rank bf16 run to fp32 over 240
// steps. The Evaluation rows hold Engine::Evaluate to the one-rank run's and
// the next Step's loss, and to changing nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "forked_ranks.h"
#include "gpu_backends.h"
#include "opaque_backend.h"
#include "parallel/engine.h"
#include "plan_builder.h"

namespace avf::parallel {
namespace {

using testing::PlanShape;

constexpr int kSteps = 3;

// bf16 bounds (why: ToleranceOf; measured on the matrix: losses within
// 0.3%, parameters 1.7e-5 rms (pipeline) to 5.8e-4 (tensor), the worst one
// 2e-2). Over 240 steps one-rank bf16 stays within 0.2% of fp32's loss
// (bf16's resolution is 2^-8 = 0.4%).
constexpr double kBf16Loss = 1e-2, kBf16Parameter = 3e-2, kBf16Rms = 1e-3, kBf16TracksFp32 = 0.01;

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
  // An fp16 plan trained in another precision would be another run than the plan's.
  runtime::RunPlan fp16 = testing::MakePlan(s);
  fp16.training.precision = runtime::Precision::Fp16;
  EXPECT_EQ(ErrorText(CheckRunnable(testing::MustBeValid(fp16), 2)),
            "this avf-run trains in fp32 and bf16 mixed precision; the plan asks for fp16, which needs loss scaling "
            "that this runtime does not have: compile the job with `precision = bf16` (same memory, no loss scaling) "
            "or `precision = fp32`");
  s.precision = runtime::Precision::Bf16;
  EXPECT_EQ(ErrorText(Runnable(s, 2)), "runnable");
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

// Data rank d's first `count` micro-batches of `step`.
auto RankBatches(const PlanShape& s, int64_t step, int64_t d, int64_t count) -> std::vector<data::Batch> {
  std::vector<data::Batch> batches;
  for (int64_t m = 0; m < count; ++m) batches.push_back(MicroBatch(s, step, d, m));
  return batches;
}

// Every data rank's first `count` micro-batches of `step`, in data-rank order.
auto GlobalBatches(const PlanShape& s, int64_t step, int64_t count) -> std::vector<data::Batch> {
  std::vector<data::Batch> batches;
  for (int64_t d = 0; d < s.data; ++d) {
    for (data::Batch& b : RankBatches(s, step, d, count)) batches.push_back(std::move(b));
  }
  return batches;
}

// The one-rank plan that takes `s`'s global batches.
auto OneRank(const PlanShape& s) -> PlanShape {
  PlanShape one = s;
  one.tensor = one.data = one.pipeline = one.chunks = 1, one.zero = 0, one.sequence_parallel = false;
  one.schedule = runtime::PipelineSchedule::OneFOneB;
  one.micro_batches = s.micro_batches * s.data;
  one.blocks.clear();
  return one;
}

// One rank with every data rank's micro-batches of each step, in data-rank
// order, on `backends` (empty: the CPU backend).
auto Reference(const PlanShape& s, const Backends& backends = {}) -> llvm::Expected<Trained> {
  auto plan = Runnable(OneRank(s), 1);
  if (!plan) return plan.takeError();
  Trained t{{}, std::move(*plan), nullptr};
  t.engine = Engine::Create({&*t.plan, 0, nullptr, nullptr, Optimizer(), 7, backends});
  for (int64_t step = 0; step < kSteps; ++step) {
    auto r = t.engine->Step(GlobalBatches(s, step, s.micro_batches), false);
    if (!r) return r.takeError();
    t.losses.push_back(r->loss);
  }
  return t;
}

// How far a layout may drift from the one-rank run of the same precision:
// the loss, relative, at every step; each final parameter, absolute; and the
// root mean square of the parameters' differences.
struct Tolerance {
  double loss, parameter, rms;
};

// "" when the parameters this rank keeps (its shard, or at ZeRO 3 its slice
// of it) equal the reference's at their full index.
auto CompareParameters(Engine& mine, Engine& whole, const Tolerance& tolerance) -> std::string {
  const model::ParamLayout& full = whole.layout();
  std::map<std::string, const model::ParamTensor*> by_name;
  for (const model::ParamTensor& t : full.tensors) by_name[t.name] = &t;
  std::vector<float> kept_params = mine.SaveState().params, whole_params = whole.SaveState().params;
  auto kept = static_cast<int64_t>(kept_params.size());
  int64_t first = kept == mine.layout().total ? 0 : mine.optimizer().mine().first;
  double squares = 0;
  for (const model::ParamTensor& t : mine.layout().tensors) {
    const model::ParamTensor& w = *by_name.at(t.name);
    const float* want = whole_params.data() + w.offset;
    double worst = 0;
    for (int64_t i = std::max<int64_t>(0, first - t.offset); i < t.size && t.offset + i < first + kept; ++i) {
      double difference = std::abs(kept_params[t.offset + i - first] - want[t.part.FullIndex(i)]);
      worst = std::max(worst, difference);
      squares += difference * difference;
    }
    if (worst > tolerance.parameter)
      return fmt::format("{}: a parameter differs by {:.2e} (tolerance {:.0e})", t.name, worst, tolerance.parameter);
  }
  double rms = std::sqrt(squares / static_cast<double>(std::max<int64_t>(1, kept)));
  if (rms > tolerance.rms)
    return fmt::format("the parameters differ by {:.2e} rms (tolerance {:.0e})", rms, tolerance.rms);
  return "";
}

// fp32: data parallelism alone reorders only the sums over micro-batches and
// ranks (parameters agree to ~1e-7); tensor parallelism also splits each
// matmul's sum, and where a gradient is a small difference of large terms the
// 1e-7 rounding becomes 1e-4 of that gradient, which Adam's ratio of moments
// can turn into ~0.5% of a step after three steps.
// bf16: every layout rounds other partial results to bf16 (2^-9 relative):
// tensor-parallel partial sums before they are added, gradients reduced over
// ranks instead of accumulated over micro-batches. Adam normalises each
// element's step, so an element whose gradient is below that rounding noise
// may step the other way: kBf16Parameter bounds the worst element, the rms
// bound says that such elements are rare.
auto ToleranceOf(const PlanShape& s) -> Tolerance {
  if (s.precision == runtime::Precision::Fp32) return {1e-5, 1e-2 * Optimizer().lr, 1e-2 * Optimizer().lr};
  return {kBf16Loss, kBf16Parameter, kBf16Rms};
}

auto RunRank(const PlanShape& s, comm::Communicator& world, const Backends& backends = {}) -> std::string {
  Tolerance tolerance = ToleranceOf(s);
  auto reference = Reference(s, backends);
  if (!reference) return "reference: " + llvm::toString(reference.takeError());
  auto plan = Runnable(s, world.size());
  if (!plan) return "plan: " + llvm::toString(plan.takeError());
  auto groups = BuildGroups(world, plan->valid());
  if (!groups) return "groups: " + comm::testing::Text(groups.takeError());
  std::unique_ptr<Engine> engine = Engine::Create({&*plan, world.rank(), &world, &*groups, Optimizer(), 7, backends});
  int64_t d = (*plan)->ranks[static_cast<size_t>(world.rank())].data;
  for (int64_t step = 0; step < kSteps; ++step) {
    std::vector<data::Batch> batches;
    for (int64_t m = 0; m < s.micro_batches; ++m) batches.push_back(MicroBatch(s, step, d, m));
    auto r = engine->Step(batches, false);
    if (!r) return fmt::format("step {}: {}", step + 1, llvm::toString(r.takeError()));
    double want = reference->losses[static_cast<size_t>(step)];
    if (std::abs(r->loss - want) > tolerance.loss * std::abs(want)) {
      return fmt::format("step {}: loss {:.9f}, one rank {:.9f}", step + 1, r->loss, want);
    }
  }
  return CompareParameters(*engine, *reference->engine, tolerance);
}

class Equivalence : public ::testing::TestWithParam<PlanShape> {};

auto Ranks(const PlanShape& s) -> int { return static_cast<int>(s.tensor * s.data * s.pipeline); }

// Runs `rank` on every rank of `s`, each forked, and expects every report empty.
void ExpectEveryRankOk(const PlanShape& s, const std::function<std::string(comm::Communicator&)>& rank) {
  // Each rank also trains the one-rank reference: minutes on a loaded 2-core
  // machine for the largest layouts, where the usual 2 s would kill it.
  comm::testing::RunSetup setup;
  setup.timeout = std::chrono::seconds(20);
  comm::testing::ExpectAllOk(comm::testing::RunRanks(Ranks(s), rank, setup));
}

TEST_P(Equivalence, MatchesOneRank) {
  const PlanShape& s = GetParam();
  ExpectEveryRankOk(s, [&](comm::Communicator& w) { return RunRank(s, w); });
}

using runtime::PipelineSchedule;
constexpr auto k1F1B = PipelineSchedule::OneFOneB;
constexpr auto kInterleaved = PipelineSchedule::Interleaved;
constexpr auto kGpipe = PipelineSchedule::Gpipe;

auto Shape(int64_t t, int64_t d, int64_t p, int64_t v, PipelineSchedule k, int64_t zero, int64_t m, bool sp,
           model::Arch arch = model::Arch::Gpt2, int64_t layers = 4) -> PlanShape {
  return {.tensor = t,
          .data = d,
          .pipeline = p,
          .chunks = v,
          .schedule = k,
          .zero = zero,
          .micro_batch = 2,
          .micro_batches = m,
          .sequence_parallel = sp,
          .model = Tiny(arch, layers)};
}

// Stages of unequal depth: `blocks` as the compiler splits the layers
// (compiler/cost/stages.h), in block order chunk x pipeline + stage.
auto Uneven(PlanShape s, std::vector<int64_t> blocks) -> PlanShape {
  s.blocks = std::move(blocks);
  return s;
}

auto Bf16(PlanShape s) -> PlanShape {
  s.precision = runtime::Precision::Bf16;
  return s;
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
        Shape(2, 2, 1, 1, k1F1B, 3, 4, false, model::Arch::Llama), Shape(1, 1, 2, 1, kGpipe, 3, 2, false),
        Uneven(Shape(1, 1, 2, 1, k1F1B, 0, 4, false, model::Arch::Gpt2, 5), {2, 3}),
        Uneven(Shape(1, 1, 3, 1, k1F1B, 0, 4, false, model::Arch::Llama, 5), {1, 2, 2}),
        Uneven(Shape(1, 1, 2, 2, kInterleaved, 0, 4, false, model::Arch::Gpt2, 5), {1, 1, 2, 1}),
        Uneven(Shape(1, 2, 3, 1, k1F1B, 1, 4, false, model::Arch::Gpt2, 4), {1, 2, 1})),
    [](const ::testing::TestParamInfo<PlanShape>& info) { return testing::ShapeName(info.param); });

// Every parallel mode once in bf16: data (reduced in bf16 with fp32
// accumulation), tensor with and without sequence parallelism, the three
// pipeline schedules, ZeRO 1 to 3 (fp32 master slices, bf16 windows), Llama.
INSTANTIATE_TEST_SUITE_P(
    Bf16Matrix, Equivalence,
    ::testing::Values(Bf16(Shape(1, 2, 1, 1, k1F1B, 0, 1, false)), Bf16(Shape(1, 2, 1, 1, k1F1B, 1, 4, false)),
                      Bf16(Shape(2, 1, 1, 1, k1F1B, 0, 1, false)), Bf16(Shape(2, 1, 1, 1, k1F1B, 0, 1, true)),
                      Bf16(Shape(1, 1, 2, 1, k1F1B, 0, 4, false)), Bf16(Shape(1, 1, 2, 2, kInterleaved, 0, 4, false)),
                      Bf16(Shape(1, 1, 2, 1, kGpipe, 0, 4, false)), Bf16(Shape(1, 2, 1, 1, k1F1B, 2, 4, false)),
                      Bf16(Shape(1, 4, 1, 1, k1F1B, 3, 2, false)), Bf16(Shape(2, 2, 2, 1, k1F1B, 1, 4, true)),
                      Bf16(Shape(2, 2, 1, 1, k1F1B, 3, 4, false, model::Arch::Llama)),
                      Bf16(Shape(2, 1, 2, 2, kInterleaved, 0, 4, false, model::Arch::Llama))),
    [](const ::testing::TestParamInfo<PlanShape>& info) { return testing::ShapeName(info.param); });

// Evaluate. Every rank of a layout trains a step, evaluates the next step's
// batches (the step's count of micro-batches, and one more, which no
// schedule would take) and trains that step; a second engine trains the two
// steps without evaluating. Evaluate gives the one-rank run's loss (within
// the matrix's loss tolerance), the same on every rank and, bit for bit, the
// loss that the next Step reports for the same batches, on one rank as on
// every layout; and it changes nothing: the steps after it have the bits of
// the steps without it (losses, norms, parameters, moments, step count).
struct TwoSteps {
  std::vector<double> evaluated;  // one per count evaluated
  std::vector<Engine::StepResult> steps;
  Engine::OptimizerState state;
};

// This rank's micro-batches of a step, `count` per data rank.
using BatchesOf = std::function<std::vector<data::Batch>(int64_t step, int64_t count)>;

// Step 0; Evaluate step 1's batches, for each of `counts`; step 1.
auto RunTwoSteps(Engine& engine, const BatchesOf& batches, int64_t micro_batches, const std::vector<int64_t>& counts)
    -> llvm::Expected<TwoSteps> {
  TwoSteps run;
  for (int64_t step : {0, 1}) {
    for (int64_t count : step == 1 ? counts : std::vector<int64_t>{}) {
      auto loss = engine.Evaluate(batches(step, count));
      if (!loss) return loss.takeError();
      run.evaluated.push_back(*loss);
    }
    auto r = engine.Step(batches(step, micro_batches), 0);
    if (!r) return r.takeError();
    run.steps.push_back(*r);
  }
  run.state = engine.SaveState();
  return run;
}

// "" when every rank evaluated the same losses.
auto SameOnEveryRank(comm::Communicator& world, const std::vector<double>& losses) -> std::string {
  std::vector<float> mine(losses.begin(), losses.end()), all(mine.size() * static_cast<size_t>(world.size()));
  if (llvm::Error e = world.AllGather(mine.data(), all.data(), mine.size())) return comm::testing::Text(std::move(e));
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] != mine[i % mine.size()]) {
      return fmt::format("rank {} evaluated {}, rank {} {}", i / mine.size(), all[i], world.rank(),
                         mine[i % mine.size()]);
    }
  }
  return "";
}

// "" when Step, Evaluate, Step trained to the bits of Step, Step.
auto Unchanged(const TwoSteps& evaluated, const TwoSteps& plain) -> std::string {
  for (size_t i = 0; i < plain.steps.size(); ++i) {
    const Engine::StepResult &got = evaluated.steps[i], &want = plain.steps[i];
    if (got.loss != want.loss || got.grad_norm != want.grad_norm) {
      return fmt::format("step {} with Evaluate: loss {} and norm {}, without {} and {}", i + 1, got.loss,
                         got.grad_norm, want.loss, want.grad_norm);
    }
  }
  const Engine::OptimizerState &got = evaluated.state, &want = plain.state;
  if (got.params != want.params || got.m != want.m || got.v != want.v || got.step != want.step) {
    return "Evaluate changed the parameters, moments or step count after the next step";
  }
  return "";
}

auto EvaluateRank(const PlanShape& s, comm::Communicator& world) -> std::string {
  const std::vector<int64_t> counts{s.micro_batches, s.micro_batches + 1};
  auto one_plan = Runnable(OneRank(s), 1);
  if (!one_plan) return "one rank: " + llvm::toString(one_plan.takeError());
  std::unique_ptr<Engine> one = Engine::Create({&*one_plan, 0, nullptr, nullptr, Optimizer(), 7, {}});
  auto global = [&](int64_t step, int64_t count) { return GlobalBatches(s, step, count); };
  auto want = RunTwoSteps(*one, global, s.micro_batches, counts);
  if (!want) return "one rank: " + llvm::toString(want.takeError());
  if (want->evaluated[0] != want->steps[1].loss) {
    return fmt::format("one rank: Evaluate {}, the next Step {}", want->evaluated[0], want->steps[1].loss);
  }
  auto plan = Runnable(s, world.size());
  if (!plan) return "plan: " + llvm::toString(plan.takeError());
  auto groups = BuildGroups(world, plan->valid());
  if (!groups) return "groups: " + comm::testing::Text(groups.takeError());
  int64_t d = (*plan)->ranks[static_cast<size_t>(world.rank())].data;
  auto run = [&](const std::vector<int64_t>& evaluate) {
    std::unique_ptr<Engine> engine = Engine::Create({&*plan, world.rank(), &world, &*groups, Optimizer(), 7, {}});
    auto mine = [&](int64_t step, int64_t count) { return RankBatches(s, step, d, count); };
    return RunTwoSteps(*engine, mine, s.micro_batches, evaluate);
  };
  auto got = run(counts);
  if (!got) return llvm::toString(got.takeError());
  for (size_t i = 0; i < counts.size(); ++i) {
    double g = got->evaluated[i], w = want->evaluated[i];
    if (std::abs(g - w) > ToleranceOf(s).loss * std::abs(w)) {
      return fmt::format("{} micro-batches: Evaluate {:.9f}, one rank {:.9f}", counts[i], g, w);
    }
  }
  if (got->evaluated[0] != got->steps[1].loss) {
    return fmt::format("Evaluate {}, the next Step {}", got->evaluated[0], got->steps[1].loss);
  }
  if (std::string e = SameOnEveryRank(world, got->evaluated); !e.empty()) return e;
  auto plain = run({});
  if (!plain) return "without Evaluate: " + llvm::toString(plain.takeError());
  return Unchanged(*got, *plain);
}

class Evaluation : public ::testing::TestWithParam<PlanShape> {};

TEST_P(Evaluation, MatchesOneRankAndChangesNothing) {
  const PlanShape& s = GetParam();
  ExpectEveryRankOk(s, [&](comm::Communicator& w) { return EvaluateRank(s, w); });
}

// One rank; data; tensor with and without sequence parallelism; the three
// schedules (interleaved with 2 and 4 stages); ZeRO 1 to 3; mixed layouts;
// Llama; and in bf16 one rank, tensor, interleaved, ZeRO 1 and 3.
INSTANTIATE_TEST_SUITE_P(
    Rows, Evaluation,
    ::testing::Values(Shape(1, 1, 1, 1, k1F1B, 0, 2, false), Shape(1, 2, 1, 1, k1F1B, 0, 2, false),
                      Shape(2, 1, 1, 1, k1F1B, 0, 2, false), Shape(2, 1, 1, 1, k1F1B, 0, 2, true),
                      Shape(1, 1, 2, 1, k1F1B, 0, 4, false), Shape(1, 1, 2, 2, kInterleaved, 0, 4, false),
                      Shape(1, 1, 4, 2, kInterleaved, 0, 4, false, model::Arch::Gpt2, 8),
                      Shape(1, 1, 2, 1, kGpipe, 0, 4, false), Shape(2, 1, 4, 1, kGpipe, 0, 4, true),
                      Shape(1, 2, 1, 1, k1F1B, 1, 4, false), Shape(1, 2, 1, 1, k1F1B, 2, 4, false),
                      Shape(1, 2, 2, 1, k1F1B, 3, 4, false), Shape(2, 2, 2, 1, k1F1B, 3, 4, true),
                      Shape(1, 2, 2, 2, kInterleaved, 2, 4, false, model::Arch::Llama),
                      Bf16(Shape(1, 1, 1, 1, k1F1B, 0, 2, false)), Bf16(Shape(2, 1, 1, 1, k1F1B, 0, 1, true)),
                      Bf16(Shape(1, 1, 2, 2, kInterleaved, 0, 4, false)), Bf16(Shape(1, 2, 1, 1, k1F1B, 1, 4, false)),
                      Bf16(Shape(2, 2, 1, 1, k1F1B, 3, 4, false, model::Arch::Llama))),
    [](const ::testing::TestParamInfo<PlanShape>& info) { return testing::ShapeName(info.param); });

// The engine on a backend whose memory the host cannot touch (OpaqueBackend,
// a GPU's stand-in): the communicators staged through host memory, the
// optimizer, the norm and the scaling in the backend. Its kernels are the
// CPU backend's, so every step's loss and norm, an Evaluate after them and
// the final parameters and moments are the CPU backend's bits, for every
// parallel mode; after the first step nothing more is allocated in the
// backend's memory (but for the pipeline senders' buffers over device links).
// With `device_comm` its communicators take device memory as NCCL's do
// (testing::OpaqueDeviceCommunicator): synced, not staged, and the pipeline
// sends and the step's agreement keep their data in the backend.
auto RunRankOpaque(const PlanShape& s, comm::Communicator& world, bool device_comm) -> std::string {
  auto plan = Runnable(s, world.size());
  if (!plan) return "plan: " + llvm::toString(plan.takeError());
  auto host_groups = BuildGroups(world, plan->valid());
  if (!host_groups) return "groups: " + comm::testing::Text(host_groups.takeError());
  testing::OpaqueDeviceCommunicator device_world(world);
  comm::Communicator& opaque_world = device_comm ? device_world : world;
  auto opaque_groups = BuildGroups(opaque_world, plan->valid());
  if (!opaque_groups) return "groups: " + comm::testing::Text(opaque_groups.takeError());
  std::function<int64_t()> allocations;
  Backends opaque{[&] {
                    auto b = std::make_unique<testing::OpaqueBackend<float>>();
                    allocations = [p = b.get()] { return p->allocations(); };
                    return b;
                  },
                  [&] {
                    auto b = std::make_unique<testing::OpaqueBackend<backend::Bf16>>();
                    allocations = [p = b.get()] { return p->allocations(); };
                    return b;
                  }};
  std::unique_ptr<Engine> host = Engine::Create({&*plan, world.rank(), &world, &*host_groups, Optimizer(), 7, {}});
  std::unique_ptr<Engine> device =
      Engine::Create({&*plan, world.rank(), &opaque_world, &*opaque_groups, Optimizer(), 7, opaque});
  int64_t d = (*plan)->ranks[static_cast<size_t>(world.rank())].data, after_first_step = 0;
  for (int64_t step = 0; step < kSteps; ++step) {
    if (step == 1) after_first_step = allocations();
    std::vector<data::Batch> batches;
    for (int64_t m = 0; m < s.micro_batches; ++m) batches.push_back(MicroBatch(s, step, d, m));
    auto want = host->Step(batches, false);
    if (!want) return fmt::format("step {} on the CPU backend: {}", step + 1, llvm::toString(want.takeError()));
    auto got = device->Step(batches, false);
    if (!got) return fmt::format("step {} on the opaque backend: {}", step + 1, llvm::toString(got.takeError()));
    if (got->loss != want->loss || got->grad_norm != want->grad_norm) {
      return fmt::format("step {}: loss {} and norm {}, the CPU backend's {} and {}", step + 1, got->loss,
                         got->grad_norm, want->loss, want->grad_norm);
    }
  }
  std::vector<data::Batch> held_out = RankBatches(s, kSteps, d, s.micro_batches);
  auto cpu_loss = host->Evaluate(held_out);
  if (!cpu_loss) return "Evaluate on the CPU backend: " + llvm::toString(cpu_loss.takeError());
  auto opaque_loss = device->Evaluate(held_out);
  if (!opaque_loss) return "Evaluate on the opaque backend: " + llvm::toString(opaque_loss.takeError());
  if (*opaque_loss != *cpu_loss) return fmt::format("Evaluate: {}, the CPU backend's {}", *opaque_loss, *cpu_loss);
  // Over device links a pipeline's sender keeps a buffer per message in
  // flight, as many as the schedule's timing makes (at most a step's sends).
  bool device_pipeline = device_comm && s.pipeline > 1;
  if (!device_pipeline && allocations() != after_first_step) {
    return fmt::format("steps 2 and 3 allocated {} buffers in the backend", allocations() - after_first_step);
  }
  Engine::OptimizerState got = device->SaveState(), want = host->SaveState();
  if (got.params != want.params) return "the parameters differ from the CPU backend's";
  if (got.m != want.m || got.v != want.v) return "the moments differ from the CPU backend's";
  return got.step == want.step ? "" : "the step counts differ";
}

class OpaqueMemory : public ::testing::TestWithParam<PlanShape> {};

TEST_P(OpaqueMemory, GivesTheCpuBackendsBits) {
  const PlanShape& s = GetParam();
  ExpectEveryRankOk(s, [&](comm::Communicator& w) { return RunRankOpaque(s, w, false); });
}

TEST_P(OpaqueMemory, WithDeviceMemoryCommunicatorsGivesTheCpuBackendsBits) {
  const PlanShape& s = GetParam();
  if (Ranks(s) == 1) GTEST_SKIP() << "one rank communicates nothing";
  ExpectEveryRankOk(s, [&](comm::Communicator& w) { return RunRankOpaque(s, w, true); });
}

// One rank; data, tensor (with sequence parallelism), pipeline (1F1B and
// interleaved), ZeRO 1 to 3, GPT-2 and Llama, fp32 and bf16.
INSTANTIATE_TEST_SUITE_P(
    Rows, OpaqueMemory,
    ::testing::Values(Shape(1, 1, 1, 1, k1F1B, 0, 2, false), Bf16(Shape(1, 1, 1, 1, k1F1B, 0, 2, false)),
                      Shape(1, 2, 1, 1, k1F1B, 1, 2, false), Shape(2, 1, 1, 1, k1F1B, 0, 1, true),
                      Bf16(Shape(1, 1, 2, 2, kInterleaved, 0, 4, false)), Bf16(Shape(1, 2, 1, 1, k1F1B, 2, 4, false)),
                      Shape(1, 2, 2, 1, k1F1B, 3, 4, false),
                      Bf16(Shape(2, 2, 1, 1, k1F1B, 3, 4, false, model::Arch::Llama)),
                      Shape(2, 1, 2, 2, kInterleaved, 0, 4, false, model::Arch::Llama)),
    [](const ::testing::TestParamInfo<PlanShape>& info) { return testing::ShapeName(info.param); });

// The GPU rows: every rank on GPU 0 with the CUDA backend (the ranks share
// it over TCP, through staged communicators: NCCL refuses two ranks on one
// GPU), against the one-rank GPU run, with the CPU matrix's tolerances (the
// layouts reorder the same sums). Skipped, with the reason, without a GPU.
class GpuRows : public ::testing::TestWithParam<PlanShape> {};

// The GPU's attention takes heads 8 or more wide (kernels.h): the tiny
// model at hidden 32, 4 heads of 8.
auto OnGpu(PlanShape s) -> PlanShape {
  s.model.hidden = 32, s.model.ffn = 64;
  return s;
}

TEST_P(GpuRows, MatchOneRankOnTheGpu) {
  if (std::string problem = testing::GpuProblem(); !problem.empty()) GTEST_SKIP() << problem;
  const PlanShape& s = GetParam();
  ExpectEveryRankOk(s, [&](comm::Communicator& w) { return RunRank(s, w, testing::GpuBackends()); });
}

INSTANTIATE_TEST_SUITE_P(
    Gpu, GpuRows,
    ::testing::Values(OnGpu(Shape(1, 2, 1, 1, k1F1B, 0, 1, false)), OnGpu(Shape(1, 2, 1, 1, k1F1B, 1, 4, false)),
                      OnGpu(Shape(2, 1, 1, 1, k1F1B, 0, 1, false)), OnGpu(Shape(2, 1, 1, 1, k1F1B, 0, 1, true)),
                      OnGpu(Shape(1, 1, 2, 1, k1F1B, 0, 4, false)), OnGpu(Shape(1, 1, 2, 2, kInterleaved, 0, 4, false)),
                      OnGpu(Shape(1, 2, 1, 1, k1F1B, 2, 4, false)), OnGpu(Shape(1, 2, 2, 1, k1F1B, 3, 4, false)),
                      OnGpu(Bf16(Shape(1, 2, 1, 1, k1F1B, 1, 4, false))),
                      OnGpu(Bf16(Shape(2, 1, 1, 1, k1F1B, 0, 1, true))),
                      OnGpu(Bf16(Shape(1, 1, 2, 2, kInterleaved, 0, 4, false))),
                      OnGpu(Bf16(Shape(2, 2, 1, 1, k1F1B, 3, 4, false, model::Arch::Llama)))),
    [](const ::testing::TestParamInfo<PlanShape>& info) { return testing::ShapeName(info.param); });

// A batch with structure to learn: each token mostly follows from the one
// before it, so the loss falls well below log(vocab) within a few hundred steps.
auto LearnableBatch(const PlanShape& s, int64_t step, int64_t m) -> data::Batch {
  data::Batch b;
  int64_t n = s.micro_batch * s.model.seq_len;
  auto vocab = static_cast<uint64_t>(s.model.vocab);
  uint64_t token = static_cast<uint64_t>(step * 7 + m) % vocab;
  for (int64_t i = 0; i < n + 1; ++i) {
    uint64_t noise = (static_cast<uint64_t>(step * 977 + m * 131 + i) * 2654435761u) >> 7;
    token = noise % 5 == 0 ? noise % vocab : (token * 5 + 3) % vocab;
    if (i < n) b.inputs.push_back(static_cast<uint32_t>(token));
    if (i > 0) b.targets.push_back(static_cast<uint32_t>(token));
  }
  return b;
}

auto TrainOneRank(PlanShape s, runtime::Precision precision, int64_t steps) -> std::vector<double> {
  s.precision = precision;
  auto plan = Runnable(s, 1);
  EXPECT_TRUE(static_cast<bool>(plan));
  if (!plan) return {};
  optim::OptimizerConfig config = Optimizer();
  config.lr = 3e-3, config.warmup = 10, config.total_steps = steps;
  std::unique_ptr<Engine> engine = Engine::Create({&*plan, 0, nullptr, nullptr, config, 7, {}});
  std::vector<double> losses;
  for (int64_t step = 0; step < steps; ++step) {
    std::vector<data::Batch> batches;
    for (int64_t m = 0; m < s.micro_batches; ++m) batches.push_back(LearnableBatch(s, step, m));
    auto r = engine->Step(batches, false);
    if (!r) ADD_FAILURE() << llvm::toString(r.takeError());
    if (!r) return {};
    losses.push_back(r->loss);
  }
  return losses;
}

TEST(Bf16, TracksFp32Over240Steps) {
  PlanShape s = Shape(1, 1, 1, 1, k1F1B, 0, 2, false);
  s.micro_batch = 4;
  constexpr int64_t kTrainSteps = 240;
  std::vector<double> fp32 = TrainOneRank(s, runtime::Precision::Fp32, kTrainSteps);
  std::vector<double> bf16 = TrainOneRank(s, runtime::Precision::Bf16, kTrainSteps);
  ASSERT_EQ(fp32.size(), static_cast<size_t>(kTrainSteps));
  ASSERT_EQ(bf16.size(), fp32.size());
  double worst = 0;
  for (size_t i = 0; i < fp32.size(); ++i) worst = std::max(worst, std::abs(bf16[i] - fp32[i]) / fp32[i]);
  EXPECT_LT(fp32.back(), 0.6 * fp32.front()) << "the tiny model should learn the batches' structure";
  EXPECT_LT(worst, kBf16TracksFp32) << fmt::format("first loss {:.4f}, last fp32 {:.4f} bf16 {:.4f}", fp32.front(),
                                                   fp32.back(), bf16.back());
}

}  // namespace
}  // namespace avf::parallel
