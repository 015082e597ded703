// The optimizer against its formulas, and 10 AdamW steps of a tiny GPT-2 and
// Llama overfitting one fixed batch: the loss curve is a golden file (written
// by this test with AVF_WRITE_GOLDEN=1 from the fp32 run), reproduced within
// 1e-5 relative, and it falls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include <llvm/Support/FileSystem.h>

#include "model/transformer.h"
#include "optim/optimizer.h"
#include "temp_dir.h"
#include "train/metrics.h"

namespace avf::train {
namespace {

using optim::AdamW;
using optim::GlobalNorm;
using optim::LearningRate;
using optim::OptimizerConfig;
using optim::Schedule;

TEST(Schedule, WarmupThenDecay) {
  OptimizerConfig c;
  c.lr = 1.0;
  c.warmup = 4;
  c.total_steps = 14;
  c.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(LearningRate(c, 0), 0.25);
  EXPECT_DOUBLE_EQ(LearningRate(c, 3), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(c, 4), 1.0);     // the decay starts at the peak
  EXPECT_NEAR(LearningRate(c, 13), 0.1, 1e-12);  // and ends at min_lr
  EXPECT_NEAR(LearningRate(c, 100), 0.1, 1e-12);
  EXPECT_NEAR(LearningRate(c, 8) + LearningRate(c, 9), 1.1, 0.12);  // about halfway
  c.schedule = Schedule::Linear;
  EXPECT_NEAR(LearningRate(c, 13), 0.1, 1e-12);
  c.schedule = Schedule::Constant;
  EXPECT_DOUBLE_EQ(LearningRate(c, 13), 1.0);
}

TEST(AdamW, OneStepByHand) {
  OptimizerConfig c;
  c.lr = 0.1;
  c.weight_decay = 0.5;
  c.clip_norm = 0;
  c.schedule = Schedule::Constant;
  AdamW opt(c, 2, {{0, 1}});  // decay on the first element only
  std::vector<float> p{1.0f, -2.0f}, g{0.5f, -0.25f};
  opt.Step(p.data(), g.data(), GlobalNorm(g.data(), 2));
  // First step: m_hat = g, v_hat = g^2, so the update is sign(g) (eps aside).
  EXPECT_NEAR(p[0], 1.0 - 0.1 * (1.0 + 0.5 * 1.0), 1e-6);
  EXPECT_NEAR(p[1], -2.0 - 0.1 * (-1.0), 1e-6);  // no decay on the second element
  EXPECT_EQ(opt.step(), 1);
}

TEST(AdamW, ClipsByTheGlobalNorm) {
  OptimizerConfig c;
  c.lr = 1.0;
  c.clip_norm = 1.0;
  c.schedule = Schedule::Constant;
  AdamW opt(c, 1, {});
  std::vector<float> p{0.0f}, g{3.0f};
  EXPECT_DOUBLE_EQ(GlobalNorm(g.data(), 1), 3.0);
  opt.Step(p.data(), g.data(), 30.0);  // the whole gradient's norm is 30: scale 1/30
  EXPECT_NEAR(opt.moments().first[0], 0.1 * 3.0 / 30.0, 1e-7);
}

// With zero gradients and moments the Adam term is 0 / eps = 0, so only
// weight decay moves a parameter: exactly the elements of the decayed runs
// change, also where a run crosses the update's 8K blocks, fills one or ends
// the buffer, and over enough elements (above 1M) to take the threaded path.
TEST(AdamW, DecaysExactlyTheGivenRuns) {
  constexpr int64_t kBlock = 8192, n = (int64_t{1} << 20) + 3 * kBlock + 77;
  const std::vector<optim::ElementRun> runs = {
      {0, 100}, {kBlock - 2, 5}, {2 * kBlock, kBlock}, {5 * kBlock + 1, 700000}, {n - 10, 10}};
  OptimizerConfig c;
  c.lr = 0.1;
  c.weight_decay = 0.5;
  c.schedule = Schedule::Constant;
  AdamW opt(c, n, runs);
  std::vector<float> p(static_cast<size_t>(n), 1.0f), g(static_cast<size_t>(n), 0.0f);
  opt.Step(p.data(), g.data(), 0.0);
  std::vector<bool> decayed(static_cast<size_t>(n), false);
  for (const optim::ElementRun& r : runs) std::fill_n(decayed.begin() + r.first, r.count, true);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    float want = decayed[static_cast<size_t>(i)] ? 1.0f - 0.05f : 1.0f;
    if (std::fabs(p[static_cast<size_t>(i)] - want) > 1e-6f && wrong++ < 5) ADD_FAILURE() << "element " << i;
  }
  EXPECT_EQ(wrong, 0);
}

auto RunCurve(model::Arch arch) -> std::vector<double> {
  model::ModelConfig mc{arch, 2, 16, 4, arch == model::Arch::Llama ? 2 : 4, 32, 23, 8, arch == model::Arch::Gpt2,
                        10000};
  model::Transformer<float> m(mc);
  m.Initialize(1234);
  OptimizerConfig oc;
  oc.lr = 1e-2;
  oc.warmup = 2;
  oc.total_steps = 10;
  oc.weight_decay = 0.1;
  AdamW opt(oc, m.layout().total, {{0, m.layout().total}});
  std::vector<uint32_t> tokens(2 * 8), targets(2 * 8);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<uint32_t>((i * 7 + 3) % 23);
    targets[i] = static_cast<uint32_t>((i * 7 + 10) % 23);
  }
  std::vector<double> losses;
  for (int step = 0; step < 10; ++step) {
    losses.push_back(m.Forward(tokens.data(), targets.data(), 2, 8));
    m.ZeroGradients();
    m.Backward();
    opt.Step(m.parameters().data(), m.gradients().data(), GlobalNorm(m.gradients().data(), m.layout().total));
  }
  return losses;
}

TEST(Training, GoldenLossCurves) {
  std::vector<double> gpt2 = RunCurve(model::Arch::Gpt2), llama = RunCurve(model::Arch::Llama);
  EXPECT_LT(gpt2.back(), gpt2.front() * 0.8);
  EXPECT_LT(llama.back(), llama.front() * 0.8);
  if (std::getenv("AVF_WRITE_GOLDEN")) {
    std::ofstream out(AVF_TRAIN_GOLDEN);
    out.precision(10);
    out << "# step gpt2_loss llama_loss: 10 AdamW steps on one fixed batch (test/unit/train_test.cpp)\n";
    for (size_t i = 0; i < gpt2.size(); ++i) out << i << " " << gpt2[i] << " " << llama[i] << "\n";
    return;
  }
  std::ifstream in(AVF_TRAIN_GOLDEN);
  ASSERT_TRUE(in) << "missing golden file " << AVF_TRAIN_GOLDEN;
  std::string line;
  size_t row = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    size_t step = 0;
    double g = 0, l = 0;
    fields >> step >> g >> l;
    ASSERT_LT(row, gpt2.size());
    EXPECT_NEAR(gpt2[row], g, 1e-5 * g) << "gpt2 step " << step;
    EXPECT_NEAR(llama[row], l, 1e-5 * l) << "llama step " << step;
    ++row;
  }
  EXPECT_EQ(row, gpt2.size());
}

TEST(MetricsText, JsonAndProgress) {
  StepMetrics m{20, 100, 3.14159, 3e-4, 0.5, 0.25, 12345.6, 1.23e9, 0.01, 0.02, 0.005, 0.125};
  EXPECT_EQ(MetricsJson(m),
            "{\"step\":20,\"loss\":3.14159,\"lr\":0.0003,\"grad_norm\":0.5,\"step_time_s\":0.25,"
            "\"tokens_per_s\":12345.6,\"flops_per_s\":1230000000,\"tensor_comm_s\":0.01,"
            "\"pipeline_comm_s\":0.02,\"data_comm_s\":0.005,\"checkpoint_s\":0.125,\"val_loss\":null,"
            "\"step_time_predicted_s\":0,\"step_time_predicted_low_s\":0,\"step_time_predicted_high_s\":0,"
            "\"nodes\":0}");
  EXPECT_EQ(ProgressText(m), "step 20/100  loss 3.1416  lr 3.00e-04  12,346 tok/s  1.23 GFLOP/s  ETA 20s");
  m.val_loss = 2.5;
  EXPECT_NE(MetricsJson(m).find("\"val_loss\":2.5,"), std::string::npos);
  m.step_time_predicted_s = 0.2;
  m.step_time_predicted_low_s = 0.18;
  m.step_time_predicted_high_s = 0.27;
  m.nodes = 3;
  EXPECT_NE(MetricsJson(m).find("\"step_time_predicted_s\":0.2,\"step_time_predicted_low_s\":0.18,"
                                "\"step_time_predicted_high_s\":0.27,\"nodes\":3}"),
            std::string::npos);
  EXPECT_EQ(ProgressText(m), "step 20/100  loss 3.1416  val 2.5000  lr 3.00e-04  12,346 tok/s  1.23 GFLOP/s  ETA 20s");
  m.val_loss = std::nan("");
  m.loss = NAN;
  EXPECT_NE(MetricsJson(m).find("\"loss\":null"), std::string::npos);
  EXPECT_EQ(DurationText(100), "1m40s");
  EXPECT_EQ(DurationText(7500), "2h05m");
  EXPECT_EQ(DurationText(3 * 86400 + 4 * 3600), "3d04h");
  EXPECT_EQ(DurationText(-1), "?");
}

class Metrics : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(root_.empty()); }
  auto Message(llvm::Error e) -> std::string { return llvm::toString(std::move(e)); }
  avf::testing::TempDir temp_{"avf-metrics-test"};
  std::string root_ = temp_.path();
};

TEST_F(Metrics, FileAppendsLines) {
  std::string path = root_ + "/metrics.jsonl";
  {
    auto f = MetricsFile::Open(path);
    ASSERT_TRUE(bool(f));
    ASSERT_FALSE(f->Append(StepMetrics{1, 2, 1.0, 0.1, 0, 0, 0, 0}));
    ASSERT_FALSE(f->Append(StepMetrics{2, 2, 0.5, 0.1, 0, 0, 0, 0}));
  }
  std::ifstream in(path);
  std::string a, b;
  std::getline(in, a);
  std::getline(in, b);
  EXPECT_EQ(a.rfind("{\"step\":1,", 0), 0u);
  EXPECT_EQ(b.rfind("{\"step\":2,\"loss\":0.5", 0), 0u);
  EXPECT_NE(Message(MetricsFile::Open(root_ + "/no/dir/m.jsonl").takeError()).find("cannot open the metrics file"),
            std::string::npos);
}

// A run resumed from step 2 drops the lines a killed run wrote past its
// checkpoint (and a torn last line): every step appears once.
TEST_F(Metrics, AResumedRunDropsTheStepsAfterItsCheckpoint) {
  std::string path = root_ + "/metrics.jsonl";
  {
    auto f = MetricsFile::Open(path);
    ASSERT_TRUE(bool(f));
    for (int64_t step = 1; step <= 4; ++step) ASSERT_FALSE(f->Append(StepMetrics{step, 9, 1.0, 0.1, 0, 0, 0, 0}));
  }
  std::ofstream(path, std::ios::app) << "{\"step\":5,\"lo";
  int64_t dropped = -1;
  {
    auto f = MetricsFile::Open(path, 2, &dropped);
    ASSERT_TRUE(bool(f)) << Message(f.takeError());
    ASSERT_FALSE(f->Append(StepMetrics{3, 9, 0.5, 0.1, 0, 0, 0, 0}));
  }
  EXPECT_EQ(dropped, 3);
  std::ifstream in(path);
  std::vector<std::string> steps;
  for (std::string line; std::getline(in, line);) steps.push_back(line.substr(0, line.find(',')));
  EXPECT_EQ(steps, (std::vector<std::string>{"{\"step\":1", "{\"step\":2", "{\"step\":3"}));
}

}  // namespace
}  // namespace avf::train
