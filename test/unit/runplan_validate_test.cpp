// Tests for runtime/plan's ValidatePlan: one mutation of a valid plan per
// consistency rule (plan-format.md, Validation), each with the message it
// must produce. Most edit the parsed RunPlan; a few edit the JSON text to
// show the whole path from file to message.
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/check_plan.h"
#include "plan/plan.h"
#include "plan/sizes.h"
#include "runplan_test_util.h"

namespace avf::runtime {
namespace {

using testing::Fixture;
using testing::FixtureV2;
using ::testing::HasSubstr;
using testing::MakePlan;
using testing::MustParse;
using testing::ParseFailure;
using testing::RemoveAt;
using testing::SetAt;
using testing::Shape;
using testing::ValidateFailure;

auto Hgx() -> RunPlan {
  static const RunPlan plan = MustParse(Fixture("hgx_h100_platform.json"));
  return plan;
}

auto Tied() -> RunPlan {
  static const RunPlan plan = MustParse(Fixture("gpt2_tiny_tied_pp.json"));
  return plan;
}

TEST(RunPlanValidate, MadePlansAreValid) {
  for (Shape s : {Shape{}, Shape{2, 4, 2, 8, 1, 1, false}, Shape{2, 2, 3, 4, 2, 3, true}, Shape{1, 3, 1, 8, 1, 2},
                  Shape{4, 1, 4, 2, 3, 0, true}, Shape{1, 12, 1, 8}}) {
    llvm::Error e = ValidatePlan(MakePlan(s));
    EXPECT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
  }
}

TEST(RunPlanValidate, RankCoordinateOutsideItsAxis) {
  std::string text = SetAt(FixtureV2("llama7b_a100_128.json"), "ranks[17].tensor", "9");
  EXPECT_EQ(ParseFailure(text), "plan.json: ranks[17].tensor: 9 is outside 0..7");
}

TEST(RunPlanValidate, RankCoordinatesFollowMegatronOrder) {
  RunPlan p = Hgx();
  p.ranks[21].data = 2;
  p.ranks[22].pipeline = 0;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: ranks[21].data: 2, but rank 21 has data coordinate 1 (rank = tensor + T x (data + D x "
            "pipeline), T = 4, D = 4)\n"
            "plan.json: ranks[22].pipeline: 0, but rank 22 has pipeline coordinate 1 (rank = tensor + T x (data + D "
            "x pipeline), T = 4, D = 4)");
}

TEST(RunPlanValidate, RanksInOrder) {
  RunPlan p = Hgx();
  p.ranks[5].rank = 6;
  EXPECT_EQ(ValidateFailure(p), "plan.json: ranks[5].rank: rank 6 at position 5; ranks are listed in rank order");
}

TEST(RunPlanValidate, RankPlacement) {
  RunPlan p = Hgx();
  p.ranks[9].node = 0;
  p.ranks[9].gpu = 0;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: ranks[9].node: 0, but rank 9 is on node 1 (rank / gpus_per_node 8)\n"
            "plan.json: ranks[9].gpu: 0, but rank 9 is GPU 1 of its node (rank mod gpus_per_node 8)");
  RunPlan q = MustParse(Fixture("llama7b_a100_128.json"));
  q.ranks[127].leaf = 0;
  EXPECT_EQ(ValidateFailure(q), "plan.json: ranks[127].leaf: 0, but node 15 is under leaf 1 (node / nodes_per_leaf 8)");
}

TEST(RunPlanValidate, RankCountIsDataTimesTensorTimesPipeline) {
  std::string text = RemoveAt(FixtureV2("hgx_h100_platform.json"), "ranks[31]");
  EXPECT_EQ(ParseFailure(text), "plan.json: ranks: 31 ranks, but data x tensor x pipeline = 4 x 4 x 2 = 32");
  RunPlan p = Hgx();
  p.training.gpus = 16;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: training.gpus: 16 GPUs, but the layout has data x tensor x pipeline = 32 ranks");
  p = Hgx();
  p.layout.data = 8;
  EXPECT_THAT(ValidateFailure(p),
              HasSubstr("plan.json: ranks: 32 ranks, but data x tensor x pipeline = 8 x 4 x 2 = 64"));
}

TEST(RunPlanValidate, HugeLayoutDoesNotOverflow) {
  std::string text = SetAt(FixtureV2("hgx_h100_platform.json"), "layout.tensor", "4611686018427387904");
  text = SetAt(text, "layout.data", "4611686018427387904");
  EXPECT_THAT(ParseFailure(text),
              HasSubstr("plan.json: layout: data x tensor x pipeline = 4611686018427387904 x 4611686018427387904 x 2 "
                        "overflows a 64-bit integer"));
  // Version 3 derives a row per rank: the count is bounded before anything is made.
  text = SetAt(Fixture("hgx_h100_platform.json"), "layout.tensor", "4611686018427387904");
  text = SetAt(text, "layout.data", "4611686018427387904");
  EXPECT_EQ(ParseFailure(text),
            "plan.json: layout: data x tensor x pipeline = 4611686018427387904 x 4611686018427387904 x 2 is more "
            "than the 2097152 ranks a plan may have");
  text = SetAt(Fixture("hgx_h100_platform.json"), "layout.data", "262145");
  EXPECT_EQ(ParseFailure(SetAt(text, "training.gpus", "2097160")),
            "plan.json: layout: data x tensor x pipeline = 262145 x 4 x 2 is more than the 2097152 ranks a plan may "
            "have");
  RunPlan p = Hgx();
  p.layout.micro_batch = INT64_MAX;
  p.model.seq_len = INT64_MAX;
  EXPECT_THAT(ValidateFailure(p), HasSubstr("training.tokens_per_step: 4194304, but global batch 512 x seq_len"));
}

TEST(RunPlanValidate, ZeroExtentsOfHandBuiltPlans) {
  RunPlan p = Hgx();
  p.layout.tensor = 0;
  p.hardware.gpus_per_node = -1;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: layout.tensor: 0 is below the minimum 1\n"
            "plan.json: hardware.gpus_per_node: -1 is below the minimum 1");
  EXPECT_THAT(ValidateFailure(RunPlan{}), HasSubstr("layout.data: 0 is below the minimum 1"));
}

TEST(RunPlanValidate, HardwareNodes) {
  RunPlan p = Hgx();
  p.hardware.nodes = 3;
  std::string message = ValidateFailure(p);
  EXPECT_THAT(message, HasSubstr("plan.json: hardware.nodes: 3 nodes, but 32 ranks on 8 GPUs per node need 4"));
  EXPECT_THAT(message, HasSubstr("plan.json: ranks[24].node: node 3 is beyond the 3 nodes the job uses"));
  p = Hgx();
  p.hardware.cluster_nodes = 2;
  EXPECT_EQ(ValidateFailure(p), "plan.json: hardware.nodes: 4 nodes used, but the cluster has 2");
}

// The compiler decides the ranks per node; the reader checks, never recomputes.
TEST(RunPlanValidate, RanksPerNode) {
  RunPlan p = Hgx();
  EXPECT_EQ(p.hardware.ranks_per_node, 8);
  p.hardware.ranks_per_node = 4;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: hardware.ranks_per_node: 4, but 32 ranks on nodes of 8 GPUs run 8 per node");
  // A job smaller than its node runs all its ranks there.
  RunPlan small = testing::MakePlan({.tensor = 2, .gpus_per_node = 8});
  EXPECT_EQ(small.hardware.ranks_per_node, 2);
  small.hardware.ranks_per_node = 8;
  EXPECT_THAT(ValidateFailure(small), HasSubstr("hardware.ranks_per_node: 8, but 2 ranks on nodes of 8 GPUs run 2"));
  EXPECT_THAT(
      testing::ParseFailure(testing::RemoveAt(testing::Fixture("hgx_h100_platform.json"), "hardware.ranks_per_node")),
      HasSubstr("hardware.ranks_per_node: missing"));
}

// The predicted totals: only `avf-run check-plan` checks them (check_plan.h).
TEST(RunPlanValidate, PredictedTotalsAgainstTheirParts) {
  RunPlan p = Hgx();
  EXPECT_FALSE(static_cast<bool>(CheckPredicted(p)));
  p.hardware.gpu_hour_price = 2.0;
  EXPECT_EQ(llvm::toString(CheckPredicted(p)),
            "plan.json: predicted.cost: null exactly when hardware.gpu_hour_price is null");
  p.predicted.cost = p.predicted.gpu_hours * 3.0;
  EXPECT_THAT(llvm::toString(CheckPredicted(p)), HasSubstr("plan.json: predicted.cost: "));
  p.predicted.cost = p.predicted.gpu_hours * 2.0;
  EXPECT_FALSE(static_cast<bool>(CheckPredicted(p)));
  p.predicted.fits = false;
  p.predicted.memory_breakdown_bytes.buffers += 100;
  std::string message = llvm::toString(CheckPredicted(p));
  EXPECT_THAT(message, HasSubstr("predicted.memory_per_gpu_bytes: "));
  EXPECT_THAT(message, HasSubstr("predicted.fits: false, but "));
}

TEST(RunPlanValidate, EveryRankInExactlyOneGroupPerKind) {
  RunPlan p = Hgx();
  p.groups.tensor[1].pop_back();  // rank 7
  EXPECT_EQ(ValidateFailure(p), "plan.json: groups.tensor: ranks [7] are in no tensor group");
  p = Hgx();
  p.groups.tensor[1][3] = 3;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: groups.tensor[1][3]: rank 3 is also in groups.tensor[0]\n"
            "plan.json: groups.tensor: ranks [7] are in no tensor group");
  p = Hgx();
  p.groups.data[0][1] = 32;
  p.groups.data[0][2] = -1;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: groups.data[0][1]: rank 32 does not exist (the plan has 32 ranks)\n"
            "plan.json: groups.data[0][2]: rank -1 does not exist (the plan has 32 ranks)\n"
            "plan.json: groups.data: ranks [4, 8] are in no data group");
  p = Hgx();
  p.groups.pipeline.pop_back();
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: groups.pipeline: ranks [15, 31] are in no pipeline group\n"
            "plan.json: groups.pipeline: 15 pipeline groups, expected 16 (ranks p = 0..P-1 at fixed (t, d); groups d "
            "outer, t inner)");
}

TEST(RunPlanValidate, GroupsInRingAndDocumentedOrder) {
  RunPlan p = Hgx();
  std::swap(p.groups.tensor[1][0], p.groups.tensor[1][1]);
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: groups.tensor[1]: [5, 4, 6, 7], but the layout puts [4, 5, 6, 7] here (ranks t = 0..T-1 at "
            "fixed (d, p); groups p outer, d inner)");
  p = Hgx();
  std::swap(p.groups.data[0], p.groups.data[1]);
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: groups.data[0]: [1, 5, 9, 13], but the layout puts [0, 4, 8, "
                                            "12] here"));
  // Every rank once, but a group that mixes two tensor groups.
  p = Hgx();
  std::swap(p.groups.tensor[0][3], p.groups.tensor[1][0]);
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: groups.tensor[0]: [0, 1, 2, 4], but the layout puts [0, 1, 2, "
                                            "3] here"));
}

TEST(RunPlanValidate, EmbeddingGroups) {
  RunPlan p = Tied();
  p.groups.embedding.clear();
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: groups: no `embedding` groups, but the model ties its embeddings and pipeline = 2: the first "
            "and last stage must sum the shared embedding's gradient");
  p = Hgx();
  p.groups.embedding = {{0, 16}};
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: groups.embedding: embedding groups exist only with tied embeddings and pipeline > 1");
  p = Tied();
  p.groups.embedding[0] = {0, 4};
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: groups.embedding[4][0]: rank 4 is also in groups.embedding[0]\n"
            "plan.json: groups.embedding: ranks [8] are in no embedding group");
  p = MakePlan(Shape{1, 2, 3, 8, 1, 0, true});  // ranks 2, 3 are stage 1 of 3
  p.groups.embedding[0][1] = 2;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: groups.embedding[0][1]: rank 2 is on neither the first nor the last pipeline stage\n"
            "plan.json: groups.embedding: ranks [4] are in no embedding group");
}

TEST(RunPlanValidate, StageEntries) {
  RunPlan p = Hgx();
  p.stages.pop_back();
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: stages: 3 entries, expected pipeline x chunks = 2 x 2 (virtual_stages of the interleaved "
            "schedule)");
  p = Hgx();
  p.layout.schedule = PipelineSchedule::OneFOneB;  // one chunk per stage
  EXPECT_EQ(ValidateFailure(p), "plan.json: stages: 4 entries, expected pipeline x chunks = 2 x 1");
  p = Hgx();
  std::swap(p.stages[1], p.stages[2]);
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: stages[1]: stage 1, chunk 0, but entry 1 is stage 0, chunk 1 (stage-major order)\n"
            "plan.json: stages[2]: stage 0, chunk 1, but entry 2 is stage 1, chunk 0 (stage-major order)");
  p = Hgx();
  p.stage_parameters.pop_back();
  EXPECT_EQ(ValidateFailure(p), "plan.json: stage_parameters: 1 entries, expected one per pipeline stage (2)");
}

TEST(RunPlanValidate, StageLayersCoverTheModelOnce) {
  RunPlan p = Hgx();
  p.stages[1].first_layer = 8;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: stages[1].first_layer: 8, but chunk 1 of stage 0 is layer block 2 (chunk x pipeline + "
            "stage), which starts at layer 16, where block 1 ends\n"
            "plan.json: stages[3].first_layer: 24, but chunk 1 of stage 1 is layer block 3 (chunk x pipeline + "
            "stage), which starts at layer 16, where block 2 ends");
  p = Hgx();
  p.stages[3].layers = 9;
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: stages[3]: 9 layers from layer 24 run past the model's 32 "
                                            "layers"));
  p = Hgx();
  p.model.layers = 40;
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: stages: layers 32..39 are held by no stage"));
  p = Hgx();
  p.stages[0].embedding = false;
  p.stages[2].output = true;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: stages[0].embedding: false, but the embedding belongs to the chunk that holds layer 0\n"
            "plan.json: stages[2].output: true, but the output layer belongs to the chunk that holds layer 31");
}

// Blocks of any size tile the layers: in block order (chunk x pipeline +
// stage) entries 0, 2, 1, 3 of the 2 x 2 interleaved plan.
auto Blocks(RunPlan p, std::vector<int64_t> sizes) -> RunPlan {
  int64_t first = 0;
  for (size_t i : {0, 2, 1, 3}) {
    p.stages[i].first_layer = first;
    p.stages[i].layers = sizes[i];
    first += sizes[i];
  }
  return p;
}

TEST(RunPlanValidate, UnevenStagesAreValid) {
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{7, 9, 8, 8}, {1, 29, 1, 1}, {8, 8, 7, 9}}) {
    llvm::Error e = ValidatePlan(Blocks(Hgx(), sizes));
    EXPECT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
  }
}

TEST(RunPlanValidate, UnevenStagesMustTileTheLayers) {
  RunPlan p = Blocks(Hgx(), {7, 9, 8, 8});  // blocks 0..6, 7..14, 15..23, 24..31
  p.stages[2].first_layer = 9;              // block 1 at 9..16: a gap at 7..8, an overlap at 15..16
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: stages[2].first_layer: 9, but chunk 0 of stage 1 is layer block 1 (chunk x pipeline + "
            "stage), which starts at layer 7, where block 0 ends\n"
            "plan.json: stages[1].first_layer: 15, but chunk 1 of stage 0 is layer block 2 (chunk x pipeline + "
            "stage), which starts at layer 17, where block 1 ends");
  p.stages[2].first_layer = 7;
  p.stages[2].layers = 6;  // block 1 at 7..12: a gap at 13..14
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: stages[1].first_layer: 15, but chunk 1 of stage 0 is layer block 2 (chunk x pipeline + "
            "stage), which starts at layer 13, where block 1 ends");
  p = Blocks(Hgx(), {8, 8, 8, 8});
  p.stages[2].layers = 0;
  EXPECT_EQ(ValidateFailure(p), "plan.json: stages[2].layers: 0, but every chunk holds at least one layer");
  p = Blocks(Hgx(), {8, 8, 8, 7});
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: stages[3].output: true, but the output layer belongs to the chunk that holds layer 31\n"
            "plan.json: stages: layers 31..31 are held by no stage");
}

TEST(RunPlanValidate, DataSlicesContiguous) {
  RunPlan p = Hgx();
  p.data.slices.pop_back();
  EXPECT_EQ(ValidateFailure(p), "plan.json: data.slices: 3 slices, expected one per data-parallel rank (4)");
  p = Hgx();
  p.data.slices[2].data_rank = 1;
  EXPECT_EQ(ValidateFailure(p), "plan.json: data.slices[2].data_rank: 1 at position 2; slices are in data-rank order");
  p = Hgx();
  p.data.slices[1].first_sequence += 1;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: data.slices[1].first_sequence: starts at sequence 129 of the global batch, but the previous "
            "slice ends at 128 (slices are contiguous from sequence 0)");
  p = Hgx();
  p.data.slices[0].sequences_per_step = 64;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: data.slices[0].sequences_per_step: 64 x 4 data ranks is not the global batch 512");
  p = Hgx();
  p.data.token_bytes = 2;
  EXPECT_EQ(ValidateFailure(p), "plan.json: data.token_bytes: 2 bytes per token, but tokens_u32 tokens are 4 bytes");
  p = Hgx();
  p.data.slices[3].sequences_per_step = INT64_MAX - 1;
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: data.slices[3].sequences_per_step: 9223372036854775806 x 4 "
                                            "data ranks is not the global batch 512"));
}

TEST(RunPlanValidate, ZeroSlicesCoverEachStageBuffer) {
  RunPlan p = Hgx();
  p.zero.stage = 2;
  EXPECT_EQ(ValidateFailure(p), "plan.json: zero.stage: ZeRO stage 2, but layout.zero is 1");
  p = MustParse(Fixture("gpt2_tiny_local.json"));
  p.zero.slices.push_back({0, 0, 0, 136960});
  EXPECT_EQ(ValidateFailure(p), "plan.json: zero.slices: ZeRO stage 0 shards nothing; the slices must be empty");
  p = Hgx();
  p.zero.slices.pop_back();
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: zero.slices: 7 slices, expected data x pipeline = 4 x 2 (each stage's data ranks)");
  p = Hgx();
  p.zero.slices[1].data_rank = 2;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: zero.slices[1]: stage 0, data rank 2, but entry 1 is stage 0, data rank 1 (stage-major, data "
            "ranks in order)");
  p = Hgx();
  p.zero.slices[1].first += 1;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: zero.slices[1].first: starts at 250970113, expected 250970112 (a stage's slices are "
            "contiguous)\n"
            "plan.json: zero.slices[2].first: starts at 501940224, expected 501940225 (a stage's slices are "
            "contiguous)");
  p = Hgx();
  p.zero.slices[7].count -= 1;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: zero.slices: stage 1's slices cover 1003884543 parameters, but stage_parameters[1] is "
            "1003884544");
  p = Hgx();
  p.zero.slices[7].count = INT64_MAX;
  EXPECT_THAT(ValidateFailure(p), HasSubstr("zero.slices[7]: first 752913408 + count 9223372036854775807 overflows"));
}

TEST(RunPlanValidate, BatchArithmetic) {
  RunPlan p = Hgx();
  p.training.micro_batch = 4;
  EXPECT_EQ(ValidateFailure(p), "plan.json: training.micro_batch: 4, but layout.micro_batch is 2");
  p = Hgx();
  p.training.micro_batches_per_step = 62;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: training.micro_batches_per_step: 62, but global batch 512 / (data 4 x micro_batch 2) is not "
            "that");
  p = Hgx();
  p.training.tokens_per_step = 1;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: training.tokens_per_step: 1, but global batch 512 x seq_len 8192 is not that");
}

TEST(RunPlanValidate, CheckpointEitherStepsOrSeconds) {
  std::string text = SetAt(Fixture("hgx_h100_platform.json"), "checkpoint.every_steps", "100");
  EXPECT_EQ(ParseFailure(text),
            "plan.json: checkpoint: every_steps and every_seconds are both set; at most one of the two is");
}

// What the layout cuts must divide (plan/cuts.h): the schedule's
// micro-batches by the stages when interleaving, the heads and kv heads by
// tensor. (The MLP width, the vocabulary and sequence-parallel rows are this
// runtime's own needs: CheckRunnable, engine_test.cpp.)
TEST(RunPlanValidate, InterleavingRunsMicroBatchesInGroupsOfP) {
  RunPlan p = Hgx();  // interleaved, P = 2, V = 2
  p.training.global_batch = 3 * 4 * 2, p.training.micro_batches_per_step = 3;
  p.training.tokens_per_step = p.training.global_batch * p.model.seq_len;
  for (DataSlice& s : p.data.slices) s.first_sequence = 6 * s.data_rank, s.sequences_per_step = 6;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: layout: the interleaved schedule needs the micro-batches per step to be a multiple of the "
            "pipeline stages (it runs them in groups of P), but M = 3 and P = 2");
  p.layout.pipeline = 1;
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: layout: the interleaved schedule with 2 model chunks needs "
                                            "more than one pipeline stage"));
}

TEST(RunPlanValidate, TensorRanksShareTheHeadsEqually) {
  RunPlan p = Hgx();  // tensor = 4
  p.model.kv_heads = 2;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: model.kv_heads: the model's kv_heads = 2 does not divide by tensor = 4: each tensor rank "
            "needs an equal share (choose a kv_heads that is a multiple of 4)");
}

// Every count a plan implies is computed with overflow checks and bounded
// (CheckSizes); the first one out of bounds is named with its keys.
TEST(RunPlanSizes, OverflowingVocabularyIsNamed) {
  std::string text = SetAt(Fixture("gpt2_tiny_local.json"), "model.vocab", "288230376151712256");  // 512 + 2^58
  EXPECT_EQ(ParseFailure(text),
            "plan.json: model.vocab: the token embedding, model.vocab x model.hidden = 288230376151712256 x 64, is "
            "more than 2^50 elements (or overflows 64 bits): no machine holds it");
}

TEST(RunPlanSizes, CountsPastTheCapAreNamed) {
  RunPlan p = MustParse(Fixture("gpt2_tiny_local.json"));
  p.model.seq_len = int64_t{1} << 24;
  p.training.tokens_per_step = p.training.global_batch << 24;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: model.seq_len: a micro-batch's attention scores, layout.micro_batch x model.heads x "
            "model.seq_len^2 = 4 x 4 x 16777216^2, is more than 2^50 elements (or overflows 64 bits): no machine "
            "holds it");
  p = MustParse(Fixture("gpt2_tiny_local.json"));
  p.model.layers = int64_t{1} << 40;
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: model.layers: the model's parameters, model.layers x the "
                                            "parameters of a layer + the embeddings = 1099511627776 x 49984 + ..."));
  p = MustParse(Fixture("gpt2_tiny_local.json"));
  p.stage_parameters[0] = INT64_MAX;
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: stage_parameters: a stage's parameters, stage_parameters[0] = "
                                            "9223372036854775807, is more than 2^50 elements"));
  p = MustParse(Fixture("gpt2_tiny_local.json"));
  p.validation = PlanValidation{"held", p.data.source, 1, TokenFormat::U16, 2, 10, int64_t{1} << 45};
  EXPECT_THAT(ValidateFailure(p), HasSubstr("plan.json: validation.batches: the tokens of one validation, "
                                            "validation.batches x training.tokens_per_step = 35184372088832 x "));
}

TEST(RunPlanSizes, HeadsDivideTheHiddenSize) {
  RunPlan p = MustParse(Fixture("gpt2_tiny_local.json"));
  p.model.heads = 3;
  EXPECT_EQ(ValidateFailure(p), "plan.json: model.heads: 3 heads do not divide model.hidden = 64 into equal heads");
  p.model.heads = 128;
  EXPECT_EQ(ValidateFailure(p), "plan.json: model.heads: 128 heads do not divide model.hidden = 64 into equal heads");
  p.model.heads = 4;
  p.model.kv_heads = 3;
  EXPECT_EQ(ValidateFailure(p),
            "plan.json: model.kv_heads: 3 key/value heads do not divide model.heads = 4 (grouped-query attention)");
}

// A rank of the 8B Llama plan (tensor 4, pipeline 2 of 2 chunks, ZeRO 1):
// its shard's weights and gradients, the moments of its ZeRO slice, the
// attention scores of its 16 layers (2 x 32/4 heads x 8192^2 each) and the
// token ids of the step's micro-batches.
TEST(RunPlanSizes, LeastRankBytesAndTheHostBound) {
  RunPlan p = Hgx();
  RankBytes b = LeastRankBytes(p, 0);
  EXPECT_EQ(b.weights, 4 * p.stage_parameters[0]);
  EXPECT_EQ(b.gradients, 4 * p.stage_parameters[0]);
  EXPECT_EQ(b.optimizer, 8 * p.zero.slices[0].count);
  EXPECT_LT(p.zero.slices[0].count, p.stage_parameters[0]);
  EXPECT_EQ(b.activations, 4 * 16 * 2 * 8 * int64_t{8192} * 8192 + 8 * p.training.micro_batches_per_step * 2 * 8192);
  // The last stage also holds the logits: 2 x 8192 rows of 128256 / 4 entries.
  RankBytes last = LeastRankBytes(p, 31);
  EXPECT_EQ(last.activations - b.activations, 4 * int64_t{2} * 8192 * (128256 / 4));
  llvm::Error small = CheckHostMemory(p, 0, int64_t{1} << 30);
  ASSERT_TRUE(static_cast<bool>(small));
  EXPECT_THAT(llvm::toString(std::move(small)), HasSubstr("the plan's 8 ranks on node 0 need at least 5"));
  EXPECT_FALSE(static_cast<bool>(CheckHostMemory(p, 0, INT64_MAX)));
  EXPECT_GT(HostMemoryBytes(), 0);
}

// A container's memory limit bounds the host's memory: the least memory.max
// from the process's cgroup up to the root (v2), or the v1 limit.
TEST(RunPlanSizes, CgroupMemoryLimit) {
  std::string root = ::testing::TempDir() + "/cgroup_limit";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/job.slice/pod");
  auto write = [](const std::string& file, const char* text) { std::ofstream(file) << text; };
  EXPECT_EQ(CgroupMemoryLimit(root, "/job.slice/pod"), std::nullopt);
  write(root + "/job.slice/pod/memory.max", "max\n");
  EXPECT_EQ(CgroupMemoryLimit(root, "/job.slice/pod"), std::nullopt);
  write(root + "/job.slice/memory.max", "8589934592\n");
  EXPECT_EQ(CgroupMemoryLimit(root, "/job.slice/pod"), int64_t{8} << 30);
  write(root + "/job.slice/pod/memory.max", "4294967296\n");
  EXPECT_EQ(CgroupMemoryLimit(root, "/job.slice/pod"), int64_t{4} << 30);
  EXPECT_EQ(CgroupMemoryLimit(root, ""), std::nullopt);
  std::filesystem::create_directories(root + "/memory");
  write(root + "/memory/memory.limit_in_bytes", "2147483648\n");
  EXPECT_EQ(CgroupMemoryLimit(root, ""), int64_t{2} << 30);
  write(root + "/memory/memory.limit_in_bytes", "garbage");
  EXPECT_EQ(CgroupMemoryLimit(root, ""), std::nullopt);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace avf::runtime
