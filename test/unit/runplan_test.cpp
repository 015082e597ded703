// Tests for runtime/plan: reading plan.json into RunPlan. The fixtures in
// Inputs/runplan/ are the compiler's output for the examples (copied, so the
// test stays hermetic) and one hand-written plan with unknown keys; the
// expected values below are read off those files by hand.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/plan.h"
#include "runplan_test_util.h"

namespace avf::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Fixture;
using testing::FixturePath;
using testing::MustParse;
using testing::ParseFailure;
using testing::RemoveAt;
using testing::SetAt;

TEST(RunPlanRead, HgxPlatformExample) {
  RunPlan p = MustParse(Fixture("hgx_h100_platform.json"));
  EXPECT_EQ(p.version, 1);
  EXPECT_EQ(p.job.name, "llama3_8b_platform");
  EXPECT_EQ(p.job.target, Target::Jobset);
  EXPECT_EQ(p.job.k8s_namespace, "ml-training");
  EXPECT_EQ(p.job.queue, "h100-team-a");
  ASSERT_TRUE(p.job.source_sha256);
  EXPECT_EQ(p.job.source_sha256->size(), 64u);
  EXPECT_EQ(p.model.arch, Arch::Llama);
  EXPECT_EQ(p.model.layers, 32);
  EXPECT_EQ(p.model.kv_heads, 8);
  EXPECT_EQ(p.model.vocab, 128256);
  EXPECT_EQ(p.model.parameters, 8030261248);
  EXPECT_EQ(p.model.flops_per_token, 57912852480.0);
  EXPECT_EQ(p.hardware.gpu_memory_bytes, 80000000000);
  EXPECT_EQ(p.hardware.peak_flops, 989.4e12);
  EXPECT_EQ(p.hardware.nodes, 4);
  EXPECT_EQ(p.hardware.gpus_per_node, 8);
  EXPECT_EQ(p.hardware.nodes_per_leaf, 4);
  EXPECT_FALSE(p.hardware.gpu_hour_price);
  EXPECT_EQ(p.training.precision, Precision::Bf16);
  EXPECT_EQ(p.training.gpus, 32);
  EXPECT_EQ(p.training.micro_batches_per_step, 64);
  EXPECT_EQ(p.training.tokens, 104857600000.0);
  EXPECT_EQ(p.training.length_field, LengthField::Steps);
  EXPECT_EQ(p.layout.schedule, PipelineSchedule::Interleaved);
  EXPECT_EQ(p.layout.virtual_stages, 2);
  EXPECT_EQ(p.layout.recompute, Recompute::Selective);
  EXPECT_TRUE(p.layout.sequence_parallel);
}

TEST(RunPlanRead, HgxPlatformExampleTables) {
  RunPlan p = MustParse(Fixture("hgx_h100_platform.json"));
  ASSERT_EQ(p.ranks.size(), 32u);
  // Rank 21 = 1 + 4 x (1 + 4 x 1): tensor 1, data 1, pipeline 1, GPU 5 of node 2.
  const PlanRank& r21 = p.ranks[21];
  EXPECT_EQ(std::vector<int64_t>({r21.rank, r21.node, r21.gpu, r21.leaf, r21.tensor, r21.data, r21.pipeline}),
            std::vector<int64_t>({21, 2, 5, 0, 1, 1, 1}));
  EXPECT_EQ(p.groups.tensor.size(), 8u);
  EXPECT_EQ(p.groups.tensor[1], RankGroup({4, 5, 6, 7}));
  EXPECT_EQ(p.groups.data[0], RankGroup({0, 4, 8, 12}));
  EXPECT_EQ(p.groups.data.back(), RankGroup({19, 23, 27, 31}));
  EXPECT_EQ(p.groups.pipeline[15], RankGroup({15, 31}));
  EXPECT_TRUE(p.groups.embedding.empty());
  ASSERT_EQ(p.stages.size(), 4u);
  EXPECT_EQ(p.stages[1].first_layer, 16);
  EXPECT_EQ(p.stages[2].first_layer, 8);
  EXPECT_TRUE(p.stages[3].output);
  EXPECT_EQ(p.stage_parameters, std::vector<int64_t>({1003880448, 1003884544}));
  EXPECT_EQ(RanksPerNode(p), 8);
}

TEST(RunPlanRead, HgxPlatformExampleDataAndSettings) {
  RunPlan p = MustParse(Fixture("hgx_h100_platform.json"));
  EXPECT_EQ(p.data.format, TokenFormat::U32);
  EXPECT_EQ(p.data.source.kind, StorageKind::Ceph);
  ASSERT_TRUE(p.data.staged_to);
  EXPECT_EQ(p.data.staged_to->path, "web");
  EXPECT_EQ(p.data.slices[3].first_token, 375000000000);
  EXPECT_EQ(p.data.slices[3].first_shard, 768);
  EXPECT_EQ(p.zero.stage, 1);
  ASSERT_EQ(p.zero.slices.size(), 8u);
  EXPECT_EQ(p.zero.slices[7].first, 752913408);
  EXPECT_EQ(p.zero.slices[7].count, 250971136);
  EXPECT_EQ(p.optimizer.kind, OptimizerKind::AdamW);
  ASSERT_TRUE(p.optimizer.betas);
  EXPECT_EQ((*p.optimizer.betas)[1], 0.95);
  EXPECT_EQ(p.optimizer.warmup, 2000);
  ASSERT_TRUE(p.checkpoint);
  EXPECT_FALSE(p.checkpoint->every_steps);
  EXPECT_EQ(p.checkpoint->every_seconds, 1800.0);
  ASSERT_TRUE(p.checkpoint->export_to);
  EXPECT_EQ(p.checkpoint->export_to->kind, StorageKind::Ceph);
  EXPECT_TRUE(p.checkpoint->async);
  EXPECT_EQ(p.predicted.memory_breakdown_bytes.activations, 30870077440);
  EXPECT_EQ(p.predicted.time_breakdown_s.data_comm, 0.0);
  EXPECT_TRUE(p.predicted.fits);
  EXPECT_EQ(p.predicted.binding, "compute");
  EXPECT_EQ(p.predicted.data_group_span_nodes, 2);
  EXPECT_FALSE(p.predicted.cost);
}

TEST(RunPlanRead, Gpt2TinyLocalExample) {
  RunPlan p = MustParse(Fixture("gpt2_tiny_local.json"));
  EXPECT_EQ(p.job.target, Target::Kubeflow);
  EXPECT_FALSE(p.job.image);
  EXPECT_FALSE(p.job.k8s_namespace);
  EXPECT_EQ(p.model.arch, Arch::Gpt2);
  EXPECT_TRUE(p.model.tied_embeddings);
  EXPECT_TRUE(p.groups.embedding.empty());  // tied, but one stage
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.hardware.gpus_per_node, 8);
  EXPECT_EQ(RanksPerNode(p), 1);  // a job smaller than its node
  EXPECT_EQ(p.training.precision, Precision::Fp32);
  EXPECT_EQ(p.stages.size(), 1u);
  EXPECT_TRUE(p.stages[0].embedding && p.stages[0].output);
  EXPECT_EQ(p.data.source.kind, StorageKind::Local);
  EXPECT_FALSE(p.data.staged_to);
  EXPECT_EQ(p.data.slices[0].last_shard, 3);
  EXPECT_EQ(p.zero.stage, 0);
  EXPECT_TRUE(p.zero.slices.empty());
  ASSERT_TRUE(p.checkpoint);
  EXPECT_EQ(p.checkpoint->every_steps, 10);
  EXPECT_FALSE(p.checkpoint->export_to);
  EXPECT_EQ(p.checkpoint->keep, 2);
  EXPECT_EQ(p.optimizer.schedule, LrSchedule::Cosine);
}

TEST(RunPlanRead, TiedPipelinePlanHasEmbeddingGroups) {
  RunPlan p = MustParse(Fixture("gpt2_tiny_tied_pp.json"));
  ASSERT_EQ(p.ranks.size(), 16u);
  EXPECT_EQ(p.hardware.nodes, 2);
  ASSERT_EQ(p.groups.embedding.size(), 8u);
  EXPECT_EQ(p.groups.embedding[0], RankGroup({0, 8}));
  EXPECT_EQ(p.groups.embedding[7], RankGroup({7, 15}));
  EXPECT_EQ(p.zero.stage, 2);
  EXPECT_EQ(p.zero.slices.size(), 8u);
  EXPECT_EQ(p.stages[1].first_layer, 2);  // stage 0, chunk 1: block 2
}

TEST(RunPlanRead, Llama7bExample) {
  RunPlan p = MustParse(Fixture("llama7b_a100_128.json"));
  ASSERT_EQ(p.ranks.size(), 128u);
  EXPECT_EQ(p.hardware.leaves, 2);
  EXPECT_EQ(p.ranks[127].leaf, 1);
  EXPECT_EQ(p.groups.tensor[15], RankGroup({120, 121, 122, 123, 124, 125, 126, 127}));
}

TEST(RunPlanRead, HandWrittenPlanWithUnknownKeys) {
  RunPlan p = MustParse(Fixture("handwritten_dp2_pp2.json"));
  EXPECT_EQ(p.job.target, Target::Slurm);
  EXPECT_EQ(p.layout.schedule, PipelineSchedule::Gpipe);
  EXPECT_EQ(p.layout.recompute, Recompute::Full);
  EXPECT_EQ(p.hardware.oversubscription, 2.5);
  EXPECT_EQ(p.hardware.gpu_hour_price, 1.5);
  EXPECT_FALSE(p.hardware.network);
  EXPECT_FALSE(p.training.length_field);
  EXPECT_EQ(p.groups.embedding, std::vector<RankGroup>({{0, 2}, {1, 3}}));
  EXPECT_EQ(p.data.staged_to->kind, StorageKind::Lustre);
  EXPECT_EQ(p.optimizer.kind, OptimizerKind::Sgd);
  EXPECT_FALSE(p.optimizer.betas);
  EXPECT_FALSE(p.optimizer.weight_decay);
  EXPECT_FALSE(p.checkpoint->dir);
  EXPECT_FALSE(p.checkpoint->keep);
  EXPECT_EQ(p.predicted.cost, 0.008333333333333333);
  EXPECT_EQ(p.predicted.binding, "pipeline bubble 10% (an open set: any text)");
}

TEST(RunPlanRead, IgnoresUnknownKeysEverywhere) {
  std::string text = Fixture("gpt2_tiny_local.json");
  for (const char* path : {"future", "job.future", "ranks[0].future", "data.slices[0].future", "predicted.future",
                           "checkpoint.future", "data.source.future", "zero.future"}) {
    text = SetAt(text, path, R"({"any": [1, "two", null]})");
  }
  RunPlan p = MustParse(text);
  EXPECT_EQ(p.ranks.size(), 1u);
}

TEST(RunPlanRead, ReadPlanFileNamesThePath) {
  llvm::Expected<RunPlan> p = ReadPlanFile(FixturePath("hgx_h100_platform.json"));
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->ranks.size(), 32u);

  std::string missing = FixturePath("no_such_plan.json");
  llvm::Expected<RunPlan> q = ReadPlanFile(missing);
  ASSERT_FALSE(static_cast<bool>(q));
  EXPECT_EQ(llvm::toString(q.takeError()), missing + ": cannot open the plan: No such file or directory");

  llvm::Expected<RunPlan> dir = ReadPlanFile(FixturePath(""));
  ASSERT_FALSE(static_cast<bool>(dir));
  EXPECT_THAT(llvm::toString(dir.takeError()), HasSubstr("cannot open the plan: it is a directory, not a regular file"));
}

TEST(RunPlanRead, ProblemsCarryFileAndKeyPath) {
  std::string bad = SetAt(Fixture("gpt2_tiny_local.json"), "ranks[0].tensor", "\"0\"");
  std::string path = ::testing::TempDir() + "/runplan_bad_plan.json";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bad.data(), 1, bad.size(), f);
    std::fclose(f);
  }
  llvm::Expected<RunPlan> p = ReadPlanFile(path);
  ASSERT_FALSE(static_cast<bool>(p));
  llvm::Error e = p.takeError();
  EXPECT_TRUE(e.isA<PlanError>());
  EXPECT_EQ(llvm::toString(std::move(e)),
            path + ": ranks[0].tensor: expected an integer, found the string \"0\"");
  std::remove(path.c_str());
}

// ---- format and version -------------------------------------------------

TEST(RunPlanFormat, NewerVersionNamesBothVersions) {
  std::string text = SetAt(Fixture("gpt2_tiny_local.json"), "version", "2");
  // A version-2 file may have changed anything: nothing else is read or reported.
  text = SetAt(text, "ranks", "\"changed in version 2\"");
  EXPECT_EQ(ParseFailure(text),
            "plan.json: version: the plan is format version 2, newer than version 1, the one this avf-run reads; "
            "run the avf-run built with the aviflowc that wrote it");
}

TEST(RunPlanFormat, BadVersions) {
  std::string tiny = Fixture("gpt2_tiny_local.json");
  EXPECT_EQ(ParseFailure(SetAt(tiny, "version", "0")),
            "plan.json: version: 0 is not a plan format version (this avf-run reads version 1)");
  EXPECT_THAT(ParseFailure(SetAt(tiny, "version", "-3")), HasSubstr("-3 is not a plan format version"));
  EXPECT_EQ(ParseFailure(SetAt(tiny, "version", "\"1\"")),
            "plan.json: version: expected an integer, found the string \"1\"");
  EXPECT_EQ(ParseFailure(SetAt(tiny, "version", "1.5")), "plan.json: version: 1.5 is not an integer");
  EXPECT_THAT(ParseFailure(SetAt(tiny, "version", "1e30")), HasSubstr("version: 1e+30 is out of range"));
  EXPECT_THAT(ParseFailure(RemoveAt(tiny, "version")), HasSubstr("plan.json: version: missing"));
  EXPECT_TRUE(MustParse(SetAt(tiny, "version", "1.0")).ranks.size() == 1);  // 1.0 is the integer 1
}

TEST(RunPlanFormat, NotAnAviflowPlan) {
  std::string tiny = Fixture("gpt2_tiny_local.json");
  EXPECT_EQ(ParseFailure(SetAt(tiny, "format", "\"other-plan\"")),
            "plan.json: format: expected \"aviflow-plan\", found the string \"other-plan\": not an aviflow plan");
  EXPECT_THAT(ParseFailure(SetAt(tiny, "format", "null")), HasSubstr("found null"));
  EXPECT_EQ(ParseFailure(RemoveAt(tiny, "format")),
            "plan.json: format: missing: not an aviflow plan (expected \"format\": \"aviflow-plan\")");
  EXPECT_EQ(ParseFailure("[1, 2]"), "plan.json: expected an object, found an array");
  EXPECT_EQ(ParseFailure("42"), "plan.json: expected an object, found the number 42");
  EXPECT_EQ(ParseFailure("{}"),
            "plan.json: format: missing: not an aviflow plan (expected \"format\": \"aviflow-plan\")");
}

// ---- wrong types, missing keys, ranges ---------------------------------

struct Mutation {
  const char* path;
  const char* value;  // nullptr: remove the key
  const char* message;
};

void ExpectMutationsFail(const std::string& fixture, std::initializer_list<Mutation> mutations) {
  std::string base = Fixture(fixture);
  for (const Mutation& m : mutations) {
    std::string text = m.value ? SetAt(base, m.path, m.value) : RemoveAt(base, m.path);
    EXPECT_THAT(ParseFailure(text), HasSubstr(m.message)) << m.path << " = " << (m.value ? m.value : "(removed)");
  }
}

TEST(RunPlanTypes, WrongTypes) {
  ExpectMutationsFail("hgx_h100_platform.json", {
      {"job", "[]", "plan.json: job: expected an object, found an array"},
      {"job.name", "5", "plan.json: job.name: expected a string, found the number 5"},
      {"job.name", "\"\"", "plan.json: job.name: is empty"},
      {"job.image", "\"\"", "plan.json: job.image: is empty (a value not set is null, never \"\")"},
      {"job.source_sha256", "\"ABC\"", "job.source_sha256: expected 64 lowercase hexadecimal digits"},
      {"job.target", "\"k8s\"", "job.target: expected `kubeflow`, `jobset` or `slurm`, found the string \"k8s\""},
      {"model.arch", "\"gpt3\"", "model.arch: expected `gpt2` or `llama`, found the string \"gpt3\""},
      {"model.layers", "2.5", "plan.json: model.layers: 2.5 is not an integer"},
      {"model.layers", "0", "plan.json: model.layers: 0 is below the minimum 1"},
      {"model.tied_embeddings", "1", "model.tied_embeddings: expected true or false, found the number 1"},
      {"model.flops_per_token", "0", "model.flops_per_token: 0 is not above 0"},
      {"hardware.oversubscription", "0.5", "hardware.oversubscription: 0.5 is below the minimum 1"},
      {"hardware.gpu_hour_price", "\"free\"", "hardware.gpu_hour_price: expected a number, found the string"},
      {"training.precision", "\"fp8\"", "training.precision: expected `bf16`, `fp16` or `fp32`"},
      {"training.length_field", "\"hours\"", "training.length_field: expected `steps`, `tokens` or `epochs`"},
      {"layout.schedule", "\"zigzag\"", "layout.schedule: expected `one_f_one_b`, `interleaved` or `gpipe`"},
      {"layout.zero", "4", "plan.json: layout.zero: 4 is outside 0..3"},
      {"layout.rank_order", "\"pipeline,data,tensor\"",
       "layout.rank_order: \"pipeline,data,tensor\" is not \"tensor,data,pipeline\", the only rank order"},
      {"ranks", "{}", "plan.json: ranks: expected an array, found an object"},
      {"ranks", "[]", "plan.json: ranks: has 0 entries, at least 1 expected"},
      {"ranks[3]", "7", "plan.json: ranks[3]: expected an object, found the number 7"},
      {"ranks[17].tensor", "\"1\"", "plan.json: ranks[17].tensor: expected an integer, found the string \"1\""},
      {"ranks[17].tensor", "-1", "plan.json: ranks[17].tensor: -1 is below the minimum 0"},
      {"groups.tensor[2]", "3", "plan.json: groups.tensor[2]: expected an array, found the number 3"},
      {"groups.tensor[2]", "[]", "plan.json: groups.tensor[2]: has 0 entries, at least 1 expected"},
      {"groups.data[0][1]", "null", "plan.json: groups.data[0][1]: expected an integer, found null"},
      {"groups.embedding", "[]", "plan.json: groups.embedding: has 0 entries, at least 1 expected"},
      {"stages[0].embedding", "\"yes\"", "stages[0].embedding: expected true or false"},
      {"stage_parameters[1]", "0", "plan.json: stage_parameters[1]: 0 is below the minimum 1"},
      {"data.format", "\"tokens_u8\"", "data.format: expected `tokens_u16` or `tokens_u32`"},
      {"data.token_bytes", "3", "data.token_bytes: 3 is not a token size (2 or 4 bytes)"},
      {"data.token_bytes", "8", "data.token_bytes: 8 is outside 2..4"},
      {"data.source", "null", "plan.json: data.source: expected an object, found null"},
      {"data.source.kind", "\"ftp\"", "data.source.kind: expected `ceph`, `s3`, `minio`, `beegfs`, `lustre`"},
      {"data.slices[1].tokens", "0", "data.slices[1].tokens: 0 is below the minimum 1"},
      {"zero.slices", "null", "plan.json: zero.slices: expected an array, found null"},
      {"optimizer.betas", "[0.9]", "plan.json: optimizer.betas: has 1 entries, at least 2 expected"},
      {"optimizer.betas", "[0.9, 0.95, 0.99]", "optimizer.betas: has 3 entries, expected 2 (beta1, beta2)"},
      {"optimizer.betas", "[0.9, 1.5]", "plan.json: optimizer.betas[1]: 1.5 is above the maximum 1"},
      {"optimizer.lr", "0", "optimizer.lr: 0 is not above 0"},
      {"optimizer.schedule", "\"step\"", "optimizer.schedule: expected `cosine`, `linear` or `constant`"},
      {"checkpoint", "5", "plan.json: checkpoint: expected an object, found the number 5"},
      {"checkpoint.keep", "0", "checkpoint.keep: 0 is below the minimum 1"},
      {"checkpoint.dir", "\"/ckpt\"", "checkpoint.dir: expected an object, found the string \"/ckpt\""},
      {"predicted.mfu", "1.5", "predicted.mfu: 1.5 is above the maximum 1"},
      {"predicted.binding", "\"\"", "predicted.binding: is empty"},
      {"predicted.data_group_span.nodes", "0", "predicted.data_group_span.nodes: 0 is below the minimum 1"},
  });
}

TEST(RunPlanTypes, MissingKeys) {
  const char* kMissing = ": missing (every key of plan-format.md is always present, null when not set)";
  std::string tiny = Fixture("gpt2_tiny_local.json");
  for (const char* path : {"job", "job.image", "model.seq_len", "hardware.gpus_per_node", "training.steps",
                           "layout.tensor", "ranks", "ranks[0].gpu", "groups", "groups.pipeline", "stages",
                           "stages[0].output", "stage_parameters", "data", "data.slices[0].first_shard",
                           "data.staged_to", "zero", "zero.slices", "optimizer.betas", "checkpoint",
                           "checkpoint.every_seconds", "predicted", "predicted.time_breakdown_s.bubble",
                           "predicted.cost"}) {
    EXPECT_EQ(ParseFailure(RemoveAt(tiny, path)), std::string("plan.json: ") + path + kMissing) << path;
  }
}

TEST(RunPlanTypes, NullableKeysAcceptNull) {
  std::string tiny = Fixture("gpt2_tiny_local.json");
  for (const char* path : {"job.source_sha256", "job.target", "hardware.network", "hardware.gpu_hour_price",
                           "training.length_field", "optimizer.lr", "optimizer.betas", "optimizer.weight_decay",
                           "checkpoint.every_steps", "checkpoint.dir", "checkpoint.keep"}) {
    MustParse(SetAt(tiny, path, "null"));
  }
  RunPlan p = MustParse(SetAt(tiny, "checkpoint", "null"));
  EXPECT_FALSE(p.checkpoint);
}

TEST(RunPlanTypes, ReportsSeveralProblemsAtOnce) {
  std::string text = Fixture("gpt2_tiny_local.json");
  text = SetAt(text, "model.heads", "\"4\"");
  text = SetAt(text, "ranks[0].gpu", "-2");
  text = RemoveAt(text, "optimizer.warmup");
  EXPECT_EQ(ParseFailure(text),
            "plan.json: model.heads: expected an integer, found the string \"4\"\n"
            "plan.json: ranks[0].gpu: -2 is below the minimum 0\n"
            "plan.json: optimizer.warmup: missing (every key of plan-format.md is always present, null when not set)");
}

TEST(RunPlanTypes, ShowsTheFirstTwentyProblems) {
  std::string text = Fixture("llama7b_a100_128.json");
  for (int i = 0; i < 30; ++i) text = SetAt(text, "ranks[" + std::to_string(i) + "].gpu", "true");
  std::string message = ParseFailure(text);
  EXPECT_THAT(message, HasSubstr("plan.json: ranks[19].gpu: expected an integer, found true"));
  EXPECT_THAT(message, Not(HasSubstr("ranks[20]")));
  EXPECT_THAT(message, HasSubstr("\n10 more problems not shown"));
}

TEST(RunPlanTypes, HugeNumbers) {
  ExpectMutationsFail("gpt2_tiny_local.json", {
      {"ranks[0].node", "9223372036854775807", "ranks[0].node: 9223372036854775807 (or more) is out of range"},
      {"ranks[0].node", "9200000000000000000", "ranks[0].node: 9200000000000000000 is out of range"},
      {"ranks[0].node", "-9223372036854775808", "ranks[0].node: -9223372036854775808 (or less) is out of range"},
      {"ranks[0].node", "1e19", "ranks[0].node: 1e+19 is out of range for a 64-bit integer"},
      {"data.tokens", "4611686018427387904", "data.slices: the slices end at token 1000000, but the dataset has"},
  });
  // Beyond what survives a round trip through llvm::json: edit the text.
  std::string tiny = Fixture("gpt2_tiny_local.json");
  struct Raw {
    std::string from, to, message;
  } raws[] = {
      {"\"node\": 0", "\"node\": 9223372036854775808", "ranks[0].node: 9223372036854775807 (or more) is out of range"},
      {"\"node\": 0", "\"node\": 18446744073709551616", "ranks[0].node: 9223372036854775807 (or more) is out of"},
      {"\"node\": 0", "\"node\": -99999999999999999999", "ranks[0].node: -9223372036854775808 (or less) is out"},
      {"\"layers\": 2", "\"layers\": 1e400", "plan.json: model.layers: inf is out of range for a 64-bit integer"},
      {"\"flops_per_token\": 884736", "\"flops_per_token\": 1e400",
       "plan.json: model.flops_per_token: the number is too large for a double"},
      {"\"flops_per_token\": 884736", "\"flops_per_token\": -1e400",
       "plan.json: model.flops_per_token: the number is too large for a double"},
      {"\"layers\": 2", "\"layers\": 1" + std::string(400, '0') + "", "model.layers: 9223372036854775807 (or more) is out of range"},
  };
  for (const Raw& r : raws) {
    EXPECT_THAT(ParseFailure(testing::ReplaceFirst(tiny, r.from, r.to)), HasSubstr(r.message)) << r.to;
  }
}

// 2^63 written as a double: llvm::json's getAsInteger() would convert it to
// int64_t, which is undefined; UBSan traps on that. The text must not reach it.
TEST(RunPlanTypes, DoubleAtTwoToTheSixtyThree) {
  std::string tiny = Fixture("gpt2_tiny_local.json");
  std::string at = "\"tensor\": 0";
  for (const char* v : {"9223372036854775808.0", "9.2233720368547758e18", "-9223372036854775808.0", "1.7e308"}) {
    std::string text = tiny;
    text.replace(text.find(at), at.size(), std::string("\"tensor\": ") + v);
    EXPECT_THAT(ParseFailure(text), HasSubstr("ranks[0].tensor:")) << v;
  }
}

// ---- hostile files -------------------------------------------------------

TEST(RunPlanHostile, NotJson) {
  EXPECT_EQ(ParseFailure(""), "plan.json: the file is empty");
  EXPECT_EQ(ParseFailure(" \n\t "), "plan.json: the file is empty");
  EXPECT_THAT(ParseFailure("{\"format\": "), HasSubstr("plan.json: not valid JSON: [1:11, byte=11]: Unexpected EOF"));
  EXPECT_THAT(ParseFailure(Fixture("gpt2_tiny_local.json") + "x"), HasSubstr("Text after end of document"));
  EXPECT_THAT(ParseFailure("{\"format\": NaN}"), HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseFailure("\xef\xbb\xbf{}"), HasSubstr("not valid JSON"));  // a BOM is not JSON
  EXPECT_THAT(ParseFailure(std::string("{\"a\": \"x\0y\"}", 12)), HasSubstr("Control character in string"));
}

TEST(RunPlanHostile, NotUtf8) {
  std::string text = Fixture("gpt2_tiny_local.json");
  text.replace(text.find("gpt2_tiny_local"), 4, "gp\xff\xfe");
  EXPECT_THAT(ParseFailure(text), HasSubstr("Invalid UTF-8 sequence"));
  EXPECT_THAT(ParseFailure("{\"\xc3\x28\": 1}"), HasSubstr("Invalid UTF-8 sequence"));
}

TEST(RunPlanHostile, DeepNesting) {
  // json::parse recurses per level; a million levels would overflow the stack.
  for (size_t depth : {65, 1000, 1000000}) {
    std::string text = std::string(depth, '[') + std::string(depth, ']');
    EXPECT_EQ(ParseFailure(text), "plan.json: not valid JSON: line 1, column 65: values nest deeper than 64 levels");
  }
  std::string nested = "{\"future\": " + std::string(70, '[') + std::string(70, ']') + "}";
  EXPECT_THAT(ParseFailure(nested), HasSubstr("values nest deeper than 64 levels"));
  // Brackets inside strings are not nesting.
  MustParse(SetAt(Fixture("gpt2_tiny_local.json"), "future", "\"" + std::string(500, '[') + "\""));
  MustParse(SetAt(Fixture("gpt2_tiny_local.json"), "future", std::string(60, '[') + std::string(60, ']')));
}

TEST(RunPlanHostile, DuplicateKeys) {
  std::string tiny = Fixture("gpt2_tiny_local.json");
  std::string dup = tiny;
  dup.replace(dup.find("\"gpu\": 0,"), 9, "\"gpu\": 0, \"gpu\": 1,");
  EXPECT_THAT(ParseFailure(dup), HasSubstr("duplicate key \"gpu\" in one object"));
  std::string escaped = tiny;
  escaped.replace(escaped.find("\"gpu\": 0,"), 9, "\"gpu\": 0, \"g\\u0070u\": 0,");
  EXPECT_THAT(ParseFailure(escaped), HasSubstr("duplicate key \"gpu\""));
  EXPECT_EQ(ParseFailure("{\n  \"a\": 1,\n  \"a\": 2\n}"),
            "plan.json: not valid JSON: line 3, column 3: duplicate key \"a\" in one object");
  // The same key in two objects, and a key-like string value, are fine.
  MustParse(SetAt(tiny, "future", R"([{"a": 1}, {"a": 2}, {"b": "a", "c": "a"}])"));
}

TEST(RunPlanHostile, HostileStringsArePrintedSafely) {
  std::string text = SetAt(Fixture("gpt2_tiny_local.json"), "model.arch", "\"\\u001b[31mred\\n\"");
  EXPECT_THAT(ParseFailure(text), HasSubstr("found the string \"\\x1b[31mred\\x0a\""));
  std::string longer = SetAt(Fixture("gpt2_tiny_local.json"), "model.arch", "\"" + std::string(1000, 'a') + "\"");
  EXPECT_THAT(ParseFailure(longer), HasSubstr(std::string(60, 'a') + "...\""));
}

TEST(RunPlanHostile, TwoGigabyteFileIsRefusedUnread) {
  std::string path = ::testing::TempDir() + "/runplan_2g.json";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, int64_t{2} << 30), 0);  // sparse: no disk used
  ::close(fd);
  llvm::Expected<RunPlan> p = ReadPlanFile(path);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_EQ(llvm::toString(p.takeError()),
            path + ": the file is 2147483648 bytes (2048 MiB); a plan is at most 268435456 bytes (256 MiB)");
  std::remove(path.c_str());
}

// Devices and pipes are no plan files: refused before anything is read, so
// neither an endless device nor a FIFO without a writer can hold avf-run.
TEST(RunPlanHostile, DevicesAndFifosAreRefused) {
  llvm::Expected<RunPlan> p = ReadPlanFile("/dev/zero", 1 << 20);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_EQ(llvm::toString(p.takeError()),
            "/dev/zero: cannot open the plan: it is a character device, not a regular file");
  std::string path = ::testing::TempDir() + "/runplan_fifo";
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  llvm::Expected<RunPlan> q = ReadPlanFile(path);
  ASSERT_FALSE(static_cast<bool>(q));
  EXPECT_EQ(llvm::toString(q.takeError()), path + ": cannot open the plan: it is a FIFO (named pipe), not a regular file");
  std::remove(path.c_str());
}

// Every prefix of a plan, and random byte damage: never a crash, always an
// error (or, for harmless damage, a plan), under ASan/UBSan in the sanitizer build.
TEST(RunPlanHostile, TruncationsAndRandomDamage) {
  std::string tiny = Fixture("gpt2_tiny_local.json");
  for (size_t n = 0; n < tiny.size(); n += 7) {
    llvm::Expected<RunPlan> p = ParsePlan(llvm::StringRef(tiny).take_front(n));
    EXPECT_FALSE(static_cast<bool>(p)) << n;
    llvm::consumeError(p.takeError());
  }
  std::string hand = Fixture("handwritten_dp2_pp2.json");
  std::mt19937 rng(20240601);
  const char kBytes[] = "{}[]\",:0123456789-+.eE \\ntruefalsenull\xff\x80";
  for (int round = 0; round < 3000; ++round) {
    std::string text = hand;
    for (int k = 0; k < 1 + round % 4; ++k) {
      text[rng() % text.size()] = kBytes[rng() % (sizeof kBytes - 1)];
    }
    llvm::Expected<RunPlan> p = ParsePlan(text);
    if (!p) llvm::consumeError(p.takeError());
  }
}

}  // namespace
}  // namespace avf::runtime
