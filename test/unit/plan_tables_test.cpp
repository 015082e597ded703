// Tests for compiler/plan/tables.cpp: the rank, group, stage, data and ZeRO
// tables of a chosen layout (docs/planner.md, "Rank order and placement").
// Every expected table is written out by hand; none is recomputed with the
// formula under test.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cost/counts.h"
#include "cost/predict.h"
#include "plan/plan.h"
#include "plan/tables.h"

namespace avf::plan {
namespace {

using Ranks = std::vector<int32_t>;

// A small GPT: 16 layers of width 64 (4 heads, ffn 256), 1000-token
// vocabulary, 128 positions, tied embeddings. Per layer 12 x 64^2 + 13 x 64 =
// 49,984 parameters; embedding 64,000; positions 8,192; final norm 128.
auto SmallGpt() -> cost::ModelShape {
  cost::ModelShape m;
  m.arch = cost::Arch::Gpt2;
  m.layers = 16;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn = 256;
  m.vocab = 1000;
  m.seq_len = 128;
  m.tied_embeddings = true;
  return m;
}

// 16 GPUs on two 8-GPU nodes, one node per leaf switch; tensor 2, pipeline 4,
// data 2, ZeRO-1; a dataset of 1,000,003 tokens in 7 shards, batch 32.
auto Plan16() -> Plan {
  Plan plan;
  plan.job.workload.model = SmallGpt();
  plan.job.workload.gpus = 16;
  plan.job.workload.global_batch = 32;
  plan.job.hardware.gpus_per_node = 8;
  plan.job.hardware.nodes = 2;
  plan.job.hardware.nodes_per_leaf = 1;
  plan.job.dataset.tokens = 1000003;
  plan.job.dataset.shards = 7;
  cost::Layout& l = plan.chosen.layout;
  l.tensor = 2;
  l.pipeline = 4;
  l.data = 2;
  l.zero = 1;
  l.micro_batch = 1;
  BuildTables(plan);
  return plan;
}

auto GroupsOf(const Plan& plan, GroupKind kind) -> std::vector<Ranks> {
  std::vector<Ranks> out;
  for (const Group& g : plan.groups) {
    if (g.kind != kind) continue;
    EXPECT_EQ(g.index, static_cast<int32_t>(out.size())) << Name(kind);
    out.push_back(g.ranks);
  }
  return out;
}

// ---- Ranks ----------------------------------------------------------------------

struct RankRow {
  int32_t rank, node, gpu, leaf, tensor, data, pipeline;
};

TEST(PlanTables, RanksOf16Gpus) {
  Plan plan = Plan16();
  // Megatron order: tensor fastest, then data, then pipeline; rank r on node
  // r / 8, GPU r % 8; one node per leaf.
  const RankRow expected[] = {
      {0, 0, 0, 0, 0, 0, 0},  {1, 0, 1, 0, 1, 0, 0},  {2, 0, 2, 0, 0, 1, 0},  {3, 0, 3, 0, 1, 1, 0},
      {4, 0, 4, 0, 0, 0, 1},  {5, 0, 5, 0, 1, 0, 1},  {6, 0, 6, 0, 0, 1, 1},  {7, 0, 7, 0, 1, 1, 1},
      {8, 1, 0, 1, 0, 0, 2},  {9, 1, 1, 1, 1, 0, 2},  {10, 1, 2, 1, 0, 1, 2}, {11, 1, 3, 1, 1, 1, 2},
      {12, 1, 4, 1, 0, 0, 3}, {13, 1, 5, 1, 1, 0, 3}, {14, 1, 6, 1, 0, 1, 3}, {15, 1, 7, 1, 1, 1, 3},
  };
  ASSERT_EQ(plan.ranks.size(), std::size(expected));
  for (const RankRow& e : expected) {
    const Rank& r = plan.ranks[e.rank];
    EXPECT_EQ(r.rank, e.rank);
    EXPECT_EQ(r.node, e.node) << "rank " << e.rank;
    EXPECT_EQ(r.gpu, e.gpu) << "rank " << e.rank;
    EXPECT_EQ(r.leaf, e.leaf) << "rank " << e.rank;
    EXPECT_EQ(r.tensor, e.tensor) << "rank " << e.rank;
    EXPECT_EQ(r.data, e.data) << "rank " << e.rank;
    EXPECT_EQ(r.pipeline, e.pipeline) << "rank " << e.rank;
  }
}

// ---- Groups ---------------------------------------------------------------------

TEST(PlanTables, TensorGroups) {
  Plan plan = Plan16();
  std::vector<Ranks> expected = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}};
  EXPECT_EQ(GroupsOf(plan, GroupKind::Tensor), expected);
}

TEST(PlanTables, DataGroups) {
  Plan plan = Plan16();
  std::vector<Ranks> expected = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}};
  EXPECT_EQ(GroupsOf(plan, GroupKind::Data), expected);
}

TEST(PlanTables, PipelineGroups) {
  Plan plan = Plan16();
  std::vector<Ranks> expected = {{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}};
  EXPECT_EQ(GroupsOf(plan, GroupKind::Pipeline), expected);
}

TEST(PlanTables, EmbeddingGroupsTieFirstAndLastStage) {
  Plan plan = Plan16();
  std::vector<Ranks> expected = {{0, 12}, {1, 13}, {2, 14}, {3, 15}};
  EXPECT_EQ(GroupsOf(plan, GroupKind::Embedding), expected);
}

TEST(PlanTables, NoEmbeddingGroupsWhenUntiedOrOneStage) {
  Plan untied;
  untied.job.workload.model = SmallGpt();
  untied.job.workload.model.tied_embeddings = false;
  untied.job.workload.global_batch = 32;
  untied.job.hardware.gpus_per_node = 8;
  untied.chosen.layout.tensor = 2;
  untied.chosen.layout.pipeline = 4;
  untied.chosen.layout.data = 2;
  BuildTables(untied);
  EXPECT_TRUE(GroupsOf(untied, GroupKind::Embedding).empty());

  Plan one_stage;
  one_stage.job.workload.model = SmallGpt();
  one_stage.job.workload.global_batch = 32;
  one_stage.job.hardware.gpus_per_node = 8;
  one_stage.chosen.layout.tensor = 2;
  one_stage.chosen.layout.data = 4;
  BuildTables(one_stage);
  EXPECT_TRUE(GroupsOf(one_stage, GroupKind::Embedding).empty());
  std::vector<Ranks> data = {{0, 2, 4, 6}, {1, 3, 5, 7}};
  EXPECT_EQ(GroupsOf(one_stage, GroupKind::Data), data);
  std::vector<Ranks> pipeline = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
  EXPECT_EQ(GroupsOf(one_stage, GroupKind::Pipeline), pipeline);
}

TEST(PlanTables, EveryRankInOneGroupOfEachKind) {
  Plan plan = Plan16();
  for (GroupKind kind : {GroupKind::Tensor, GroupKind::Data, GroupKind::Pipeline}) {
    std::multiset<int32_t> seen;
    for (const Ranks& g : GroupsOf(plan, kind)) seen.insert(g.begin(), g.end());
    ASSERT_EQ(seen.size(), 16u) << Name(kind);
    for (int32_t r = 0; r < 16; ++r) EXPECT_EQ(seen.count(r), 1u) << Name(kind) << " rank " << r;
  }
}

// ---- Stages ---------------------------------------------------------------------

struct ChunkRow {
  int32_t stage, chunk;
  int64_t first_layer, layers;
  bool embedding, output;
};

void ExpectStages(const Plan& plan, const std::vector<ChunkRow>& expected) {
  ASSERT_EQ(plan.stages.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const StageChunk& s = plan.stages[i];
    const ChunkRow& e = expected[i];
    EXPECT_EQ(s.stage, e.stage) << i;
    EXPECT_EQ(s.chunk, e.chunk) << i;
    EXPECT_EQ(s.first_layer, e.first_layer) << i;
    EXPECT_EQ(s.layers, e.layers) << i;
    EXPECT_EQ(s.embedding, e.embedding) << i;
    EXPECT_EQ(s.output, e.output) << i;
  }
}

TEST(PlanTables, StagesOneFOneB) {
  ExpectStages(
      Plan16(),
      {{0, 0, 0, 4, true, false}, {1, 0, 4, 4, false, false}, {2, 0, 8, 4, false, false}, {3, 0, 12, 4, false, true}});
}

auto Pipelined(int64_t pipeline, cost::Schedule schedule, int64_t chunks) -> Plan {
  Plan plan;
  plan.job.workload.model = SmallGpt();
  plan.job.workload.global_batch = 32;
  plan.job.hardware.gpus_per_node = 8;
  plan.chosen.layout.pipeline = pipeline;
  plan.chosen.layout.schedule = schedule;
  plan.chosen.layout.virtual_stages = chunks;
  BuildTables(plan);
  return plan;
}

auto Interleaved(int64_t pipeline, int64_t chunks) -> Plan {
  return Pipelined(pipeline, cost::Schedule::Interleaved, chunks);
}

TEST(PlanTables, InterleavedStagesTwoByTwo) {
  // 16 layers, p = 2, v = 2: stage 0 holds layers 0-3 and 8-11.
  ExpectStages(
      Interleaved(2, 2),
      {{0, 0, 0, 4, true, false}, {0, 1, 8, 4, false, false}, {1, 0, 4, 4, false, false}, {1, 1, 12, 4, false, true}});
}

TEST(PlanTables, InterleavedStagesFourByTwo) {
  ExpectStages(Interleaved(4, 2), {{0, 0, 0, 2, true, false},
                                   {0, 1, 8, 2, false, false},
                                   {1, 0, 2, 2, false, false},
                                   {1, 1, 10, 2, false, false},
                                   {2, 0, 4, 2, false, false},
                                   {2, 1, 12, 2, false, false},
                                   {3, 0, 6, 2, false, false},
                                   {3, 1, 14, 2, false, true}});
}

// 16 layers on 3 stages: 5, 6, 5 (the extra layer goes to the middle chunk).
TEST(PlanTables, UnevenStagesOneFOneB) {
  Plan plan = Pipelined(3, cost::Schedule::OneFOneB, 1);
  ExpectStages(plan, {{0, 0, 0, 5, true, false}, {1, 0, 5, 6, false, false}, {2, 0, 11, 5, false, true}});
  // GPT-2 with tied embeddings, one tensor rank: 49,984 parameters a layer;
  // the first stage adds the embedding and positions, the last the final norm
  // and the embedding's copy.
  EXPECT_EQ(plan.stage_params, (std::vector<int64_t>{5 * 49984 + 64000 + 8192, 6 * 49984, 5 * 49984 + 128 + 64000}));
}

// 16 layers in 3 x 2 chunks: 2, 3, 3, 3, 3, 2 in block order c x p + s.
TEST(PlanTables, UnevenInterleavedStages) {
  ExpectStages(Interleaved(3, 2), {{0, 0, 0, 2, true, false},
                                   {0, 1, 8, 3, false, false},
                                   {1, 0, 2, 3, false, false},
                                   {1, 1, 11, 3, false, false},
                                   {2, 0, 5, 3, false, false},
                                   {2, 1, 14, 2, false, true}});
}

TEST(PlanTables, StageParameters) {
  Plan plan = Plan16();
  // Per tensor rank: the split part of 4 layers (49984 - 384 replicated
  // LayerNorm and row-parallel bias parameters each) and of the vocab-parallel
  // embedding halves; norms, biases and positions stay whole. Stage 0 adds the
  // embedding and the positions; stage 3 the final norm and the tied copy.
  const int64_t split = 4 * (49984 - 384), whole = 4 * 384;
  std::vector<int64_t> expected = {(split + 64000) / 2 + whole + 8192, split / 2 + whole, split / 2 + whole,
                                   (split + 64000) / 2 + whole + 128};
  EXPECT_EQ(plan.stage_params, (std::vector<int64_t>{140928, 100736, 100736, 132864}));
  EXPECT_EQ(plan.stage_params, expected);
  // The whole model: both tensor ranks' shards, less what both keep whole
  // and the tied copy.
  int64_t sum = std::accumulate(plan.stage_params.begin(), plan.stage_params.end(), int64_t{0});
  EXPECT_EQ(2 * sum - (4 * whole + 8192 + 128) - 64000, cost::CountParams(SmallGpt()).total);
}

// ---- Data -----------------------------------------------------------------------

TEST(PlanTables, DataSlicesAreContiguous) {
  Plan plan = Plan16();
  // A global batch of 32 sequences over 2 data ranks: the first 16 of every
  // global batch to rank 0, the other 16 to rank 1, whatever the dataset.
  ASSERT_EQ(plan.data.size(), 2u);
  const DataSlice& a = plan.data[0];
  const DataSlice& b = plan.data[1];
  EXPECT_EQ(a.data_rank, 0);
  EXPECT_EQ(a.first_sequence, 0);
  EXPECT_EQ(a.sequences_per_step, 16);
  EXPECT_EQ(b.data_rank, 1);
  EXPECT_EQ(b.first_sequence, 16);
  EXPECT_EQ(b.sequences_per_step, 16);
}

TEST(PlanTables, DataSlicesCoverTheDataset) {
  Plan plan;
  plan.job.workload.model = SmallGpt();
  plan.job.workload.global_batch = 96;
  plan.job.hardware.gpus_per_node = 8;
  plan.job.dataset.tokens = 1000;
  plan.job.dataset.shards = 10;
  plan.chosen.layout.data = 3;
  BuildTables(plan);
  ASSERT_EQ(plan.data.size(), 3u);
  for (int64_t d = 0; d < 3; ++d) {
    EXPECT_EQ(plan.data[d].first_sequence, 32 * d);
    EXPECT_EQ(plan.data[d].sequences_per_step, 32);
  }
}

// ---- ZeRO -----------------------------------------------------------------------

TEST(PlanTables, ZeroSlices) {
  Plan plan = Plan16();
  ASSERT_EQ(plan.zero.size(), 8u);  // 4 stages x 2 data ranks
  struct Row {
    int32_t stage, data_rank;
    int64_t first, count;
  };
  const Row expected[] = {{0, 0, 0, 70464}, {0, 1, 70464, 70464}, {1, 0, 0, 50368}, {1, 1, 50368, 50368},
                          {2, 0, 0, 50368}, {2, 1, 50368, 50368}, {3, 0, 0, 66432}, {3, 1, 66432, 66432}};
  for (size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_EQ(plan.zero[i].stage, expected[i].stage) << i;
    EXPECT_EQ(plan.zero[i].data_rank, expected[i].data_rank) << i;
    EXPECT_EQ(plan.zero[i].first, expected[i].first) << i;
    EXPECT_EQ(plan.zero[i].count, expected[i].count) << i;
  }
}

TEST(PlanTables, ZeroSlicesSumToTheStage) {
  Plan plan;
  plan.job.workload.model = SmallGpt();
  plan.job.workload.global_batch = 96;
  plan.job.hardware.gpus_per_node = 8;
  plan.chosen.layout.pipeline = 2;
  plan.chosen.layout.data = 3;
  plan.chosen.layout.zero = 3;
  BuildTables(plan);
  // Stage 0: 8 x 49,984 + 64,000 + 8,192 = 472,064 = 157,354 + 157,354 + 157,356.
  ASSERT_EQ(plan.stage_params.size(), 2u);
  EXPECT_EQ(plan.stage_params[0], 472064);
  ASSERT_EQ(plan.zero.size(), 6u);
  EXPECT_EQ(plan.zero[0].count, 157354);
  EXPECT_EQ(plan.zero[1].first, 157354);
  EXPECT_EQ(plan.zero[2].first, 314708);
  EXPECT_EQ(plan.zero[2].count, 157356);
  for (int32_t s = 0; s < 2; ++s) {
    int64_t next = 0;
    for (const ZeroSlice& z : plan.zero) {
      if (z.stage != s) continue;
      EXPECT_EQ(z.first, next) << "stage " << s << " rank " << z.data_rank;
      next = z.first + z.count;
    }
    EXPECT_EQ(next, plan.stage_params[s]) << "stage " << s;
  }
}

TEST(PlanTables, NoZeroSlicesWithoutZero) {
  Plan plan = Plan16();
  Plan plain;
  plain.job = plan.job;
  plain.chosen.layout = plan.chosen.layout;
  plain.chosen.layout.zero = 0;
  BuildTables(plain);
  EXPECT_TRUE(plain.zero.empty());
}

// ---- Placement: the time model's spans against the tables ------------------------
// cost::DataSpan and PipelineHopSpan size the links of the time model (and the
// W0804 cross-leaf warning). No group of the same kind may span more nodes or
// leaves than they report, or the prediction is optimistic.

auto NodesOf(const Plan& plan, const Ranks& ranks) -> int64_t {
  std::set<int32_t> nodes;
  for (int32_t r : ranks) nodes.insert(plan.ranks[r].node);
  return static_cast<int64_t>(nodes.size());
}

auto LeavesOf(const Plan& plan, const Ranks& ranks) -> int64_t {
  std::set<int32_t> leaves;
  for (int32_t r : ranks) leaves.insert(plan.ranks[r].leaf);
  return static_cast<int64_t>(leaves.size());
}

// 16 GPUs, tensor 2, data 2, pipeline 4: pipeline neighbours are 4 ranks
// apart, so stage 1 -> 2 (ranks 4 -> 8) crosses from node 0 to node 1, while
// so the hop span must be two nodes.
TEST(PlanTables, PipelineHopSpanCoversEveryStageBoundary) {
  Plan plan = Plan16();
  const cost::Layout& l = plan.chosen.layout;
  cost::GroupSpan span = cost::PipelineHopSpan(l, plan.job.hardware);
  for (const Ranks& g : GroupsOf(plan, GroupKind::Pipeline)) {
    for (size_t i = 0; i + 1 < g.size(); ++i) {
      EXPECT_LE(NodesOf(plan, {g[i], g[i + 1]}), span.nodes) << "hop " << g[i] << " -> " << g[i + 1];
    }
  }
}

// 48 GPUs on 6 nodes, 4 nodes per leaf; tensor 8, data 3, pipeline 2. The data
// groups of stage 0 use nodes 0-2 (leaf 0); those of stage 1 use nodes 3-5,
// which straddle leaves 0 and 1.
TEST(PlanTables, DataSpanCoversEveryDataGroup) {
  Plan plan;
  plan.job.workload.model = SmallGpt();
  plan.job.workload.gpus = 48;
  plan.job.workload.global_batch = 96;
  plan.job.hardware.gpus_per_node = 8;
  plan.job.hardware.nodes = 8;
  plan.job.hardware.nodes_per_leaf = 4;
  plan.job.hardware.oversubscription = 2;
  plan.chosen.layout.tensor = 8;
  plan.chosen.layout.data = 3;
  plan.chosen.layout.pipeline = 2;
  BuildTables(plan);
  std::vector<Ranks> data = GroupsOf(plan, GroupKind::Data);
  ASSERT_EQ(data.size(), 16u);
  EXPECT_EQ(data[0], (Ranks{0, 8, 16}));
  EXPECT_EQ(data[8], (Ranks{24, 32, 40}));
  EXPECT_EQ(LeavesOf(plan, data[0]), 1);
  EXPECT_EQ(LeavesOf(plan, data[8]), 2);  // nodes 3, 4, 5: leaves 0, 1, 1
  cost::GroupSpan span = cost::DataSpan(plan.chosen.layout, plan.job.hardware);
  for (const Ranks& g : data) {
    EXPECT_LE(NodesOf(plan, g), span.nodes);
    EXPECT_LE(LeavesOf(plan, g), span.leaves) << "data group starting at rank " << g[0];
  }
}

// 24 GPUs on 8-GPU nodes; tensor 2, data 3, pipeline 4. Stage 0's data group
// 0 is ranks 0, 2, 4 (node 0); stage 1's is ranks 6, 8, 10 (nodes 0 and 1),
// so the widest data group spans two nodes.
TEST(PlanTables, DataSpanNodesCoverEveryDataGroup) {
  Plan plan;
  plan.job.workload.model = SmallGpt();
  plan.job.workload.gpus = 24;
  plan.job.workload.global_batch = 96;
  plan.job.hardware.gpus_per_node = 8;
  plan.job.hardware.nodes = 3;
  plan.chosen.layout.tensor = 2;
  plan.chosen.layout.data = 3;
  plan.chosen.layout.pipeline = 4;
  BuildTables(plan);
  std::vector<Ranks> data = GroupsOf(plan, GroupKind::Data);
  ASSERT_EQ(data.size(), 8u);
  EXPECT_EQ(data[0], (Ranks{0, 2, 4}));
  EXPECT_EQ(data[2], (Ranks{6, 8, 10}));
  cost::GroupSpan span = cost::DataSpan(plan.chosen.layout, plan.job.hardware);
  EXPECT_EQ(span.nodes, 2);
  for (const Ranks& g : data) {
    EXPECT_LE(NodesOf(plan, g), span.nodes) << "data group starting at rank " << g[0];
  }
}

}  // namespace
}  // namespace avf::plan
