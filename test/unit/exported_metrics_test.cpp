#include "train/exported_metrics.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

#include "plan_builder.h"
#include "train/run_starts.h"

namespace avf::train {
namespace {

using exposition::Family;

auto Plan() -> runtime::RunPlan {
  runtime::RunPlan p = testing::MakePlan({.tensor = 2, .data = 2, .pipeline = 2, .model = {.layers = 2}});
  p.predicted.step_time_s = 0.5;
  p.predicted.time_breakdown_s = {0.2, 0.1, 0.05, 0.08, 0.06, 0.01};
  p.predicted.memory_breakdown_bytes = {100, 100, 200, 300, 50};
  p.predicted.memory_per_gpu_bytes = 750;
  p.predicted.tokens_per_s = 1e6;
  p.predicted.tflops_per_gpu = 150;
  p.predicted.mfu = 0.48;
  p.hardware.peak_flops = 312e12;
  p.checkpoint = runtime::PlanCheckpoint{};
  p.checkpoint->every_steps = 100;
  return p;
}

auto ByName(const std::vector<Family>& families) -> std::map<std::string, const Family*> {
  std::map<std::string, const Family*> out;
  for (const Family& f : families) out[f.name] = &f;
  return out;
}

auto Label(const exposition::Sample& s, const std::string& name) -> std::string {
  for (const auto& [k, v] : s.labels) {
    if (k == name) return v;
  }
  return "(none)";
}

TEST(ExportedMetrics, BeforeTheFirstStepOnlyProgressAndStart) {
  runtime::RunPlan plan = Plan();
  RankObservation o;
  o.restarts = 2;
  auto families = ByName(ExportedFamilies(plan, 5, o));
  EXPECT_EQ(families.count("avf_loss"), 0u);
  ASSERT_EQ(families.count("avf_step"), 1u);
  EXPECT_EQ(families["avf_step"]->samples[0].value, 0);
  EXPECT_EQ(families["avf_restarts_total"]->samples[0].value, 2);
  EXPECT_EQ(families["avf_restarts_total"]->type, exposition::MetricType::Counter);
  EXPECT_EQ(families["avf_nodes"]->samples[0].value, static_cast<double>(plan.hardware.nodes));
  EXPECT_EQ(families["avf_node_count_changes_total"]->samples[0].value, 0);
  EXPECT_EQ(families["avf_node_count_changes_total"]->type, exposition::MetricType::Counter);
  // Rank 5 is not rank 0: it does not commit, so it serves no commit time.
  EXPECT_EQ(families.count("avf_checkpoint_commit_timestamp_seconds"), 0u);
}

TEST(ExportedMetrics, AnElasticJobsNodeCountAndItsChanges) {
  runtime::RunPlan plan = Plan();
  plan.hardware.nodes = 3;
  RankObservation o;
  o.node_count_changes = 2;
  auto families = ByName(ExportedFamilies(plan, 0, o));
  EXPECT_EQ(families["avf_nodes"]->samples[0].value, 3);
  EXPECT_EQ(families["avf_node_count_changes_total"]->samples[0].value, 2);
}

TEST(ExportedMetrics, TheStepAgainstThePlanWithTheRanksLabels) {
  runtime::RunPlan plan = Plan();
  RankObservation o;
  o.step.step = 7;
  o.step.loss = 2.5;
  o.step.step_time_s = 1.0;
  o.step.flops_per_s = 8 * 78e12;  // the job's: 8 ranks of 78 TFLOP/s
  o.own = {0.1, 0.2, 0.05, 0.15, 0.02};
  o.memory = {10, 20, 30, 40, 5};
  o.commits = true;
  o.checkpoint_commit_unix_s = 1234.5;
  auto list = ExportedFamilies(plan, 5, o);
  auto families = ByName(list);
  const exposition::Sample& loss = families["avf_loss"]->samples[0];
  // rank = t + T·(d + D·p): rank 5 is tensor 1, data 0, pipeline 1, on node 0.
  EXPECT_EQ(Label(loss, "job"), "made");
  EXPECT_EQ(Label(loss, "rank"), "5");
  EXPECT_EQ(Label(loss, "tensor"), "1");
  EXPECT_EQ(Label(loss, "data"), "0");
  EXPECT_EQ(Label(loss, "pipeline"), "1");
  EXPECT_EQ(Label(loss, "stage"), "1");
  EXPECT_EQ(Label(loss, "node"), "0");
  EXPECT_DOUBLE_EQ(families["avf_model_flops_per_second"]->samples[0].value, 78e12);
  EXPECT_DOUBLE_EQ(families["avf_mfu_ratio"]->samples[0].value, 0.25);
  EXPECT_DOUBLE_EQ(families["avf_mfu_ratio_predicted"]->samples[0].value, 0.48);
  EXPECT_DOUBLE_EQ(families["avf_step_seconds_predicted"]->samples[0].value, 0.5);
  std::map<std::string, double> parts, predicted;
  for (const auto& s : families["avf_step_part_seconds"]->samples) parts[Label(s, "part")] = s.value;
  for (const auto& s : families["avf_step_part_seconds_predicted"]->samples) predicted[Label(s, "part")] = s.value;
  EXPECT_DOUBLE_EQ(parts["compute"], 1.0 - (0.1 + 0.2 + 0.05 + 0.15 + 0.02));
  EXPECT_DOUBLE_EQ(parts["bubble"], 0.05);
  EXPECT_DOUBLE_EQ(predicted["bubble"], 0.08);
  EXPECT_EQ(predicted.count("checkpoint"), 0u);
  std::map<std::string, double> memory;
  for (const auto& s : families["avf_memory_bytes"]->samples) memory[Label(s, "category")] = s.value;
  EXPECT_EQ(memory["buffers"], 5);
  EXPECT_EQ(families["avf_memory_peak_bytes_predicted"]->samples[0].value, 750);
  EXPECT_EQ(families["avf_checkpoint_commit_timestamp_seconds"]->samples[0].value, 1234.5);
  EXPECT_DOUBLE_EQ(families["avf_checkpoint_interval_seconds_predicted"]->samples[0].value, 50);
  // Each family once, the measured one before its prediction.
  EXPECT_EQ(list.size(), families.size());
  EXPECT_EQ(list[0].name, "avf_step");
}

TEST(ExportedMetrics, TheText) {
  runtime::RunPlan plan = Plan();
  RankObservation o;
  o.step.step = 3;
  std::string text = exposition::RenderText(ExportedFamilies(plan, 0, o));
  EXPECT_NE(text.find("# TYPE avf_restarts_total counter\n"), std::string::npos);
  EXPECT_NE(
      text.find("avf_step{job=\"made\",rank=\"0\",node=\"0\",stage=\"0\",tensor=\"0\",data=\"0\",pipeline=\"0\"} 3\n"),
      std::string::npos)
      << text;
}

TEST(RunStarts, EachRankCountsItsOwnStarts) {
  char dir[] = "/tmp/avf_starts_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  for (int64_t n = 0; n < 3; ++n) {
    llvm::Expected<int64_t> before = RecordStart(dir, 4, 10 * n, 100.0 + static_cast<double>(n));
    ASSERT_TRUE(static_cast<bool>(before)) << llvm::toString(before.takeError());
    EXPECT_EQ(*before, n);
  }
  llvm::Expected<int64_t> other = RecordStart(dir, 0, 0, 1.0);
  ASSERT_TRUE(static_cast<bool>(other));
  EXPECT_EQ(*other, 0);
  llvm::Expected<int64_t> refused = RecordStart("/proc/self/nowhere", 0, 0, 1.0);
  EXPECT_FALSE(static_cast<bool>(refused));
  llvm::consumeError(refused.takeError());
  llvm::sys::fs::remove_directories(dir);
}

}  // namespace
}  // namespace avf::train
