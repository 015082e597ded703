// Tests for compiler/cost/stages.h, the one rule that splits a model's
// layers over pipeline chunks (docs/planner.md, "Uneven stages"): worked
// examples written out by hand, then the rule's invariants over every small
// (layers, chunks) pair.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "cost/counts.h"
#include "cost/stages.h"

namespace avf::cost {
namespace {

auto Repeat(int64_t value, int64_t times) -> std::vector<int64_t> {
  return std::vector<int64_t>(static_cast<size_t>(times), value);
}

auto Join(std::initializer_list<std::vector<int64_t>> parts) -> std::vector<int64_t> {
  std::vector<int64_t> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

TEST(Stages, EvenSplitsAreEqualBlocks) {
  EXPECT_EQ(ChunkLayerCounts(32, 8), Repeat(4, 8));
  EXPECT_EQ(ChunkLayerCounts(7, 1), std::vector<int64_t>{7});
  EXPECT_EQ(ChunkLayerCounts(16, 16), Repeat(1, 16));
  EXPECT_EQ(ChunkFirstLayer(32, 8, 5), 20);
}

// Llama 3 405B on 16 stages: the embedding and the head stages hold a layer less.
TEST(Stages, Llama405BOn16Stages) {
  EXPECT_EQ(ChunkLayerCounts(126, 16), Join({{7}, Repeat(8, 14), {7}}));
  EXPECT_EQ(ChunkFirstLayer(126, 16, 0), 0);
  EXPECT_EQ(ChunkFirstLayer(126, 16, 1), 7);
  EXPECT_EQ(ChunkFirstLayer(126, 16, 15), 119);
}

// The extra layers fill the middle from the last-but-one chunk down.
TEST(Stages, ExtraLayersGoToTheLaterMiddleChunks) {
  EXPECT_EQ(ChunkLayerCounts(10, 4), (std::vector<int64_t>{2, 3, 3, 2}));
  EXPECT_EQ(ChunkLayerCounts(9, 4), (std::vector<int64_t>{2, 2, 3, 2}));
  EXPECT_EQ(ChunkLayerCounts(4, 3), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(ChunkLayerCounts(13, 6), (std::vector<int64_t>{2, 2, 2, 2, 3, 2}));
  EXPECT_EQ(ChunkFirstLayer(13, 6, 5), 11);
}

// With C - 1 extra layers every chunk but the first takes one.
TEST(Stages, LastChunkTakesOneOnlyWhenEveryMiddleChunkHas) {
  EXPECT_EQ(ChunkLayerCounts(5, 2), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ChunkLayerCounts(5, 3), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(ChunkLayerCounts(11, 4), (std::vector<int64_t>{2, 3, 3, 3}));
  EXPECT_EQ(ChunkFirstLayer(11, 4, 3), 8);
}

// Stage s holds chunks s, s + P, ...: 126 layers in 16 chunks on 8 stages.
TEST(Stages, StagesSumTheirChunks) {
  EXPECT_EQ(StageLayers(126, 8, 2, 0), 7 + 8);
  EXPECT_EQ(StageLayers(126, 8, 2, 3), 8 + 8);
  EXPECT_EQ(StageLayers(126, 8, 2, 7), 8 + 7);
  EXPECT_EQ(MaxStageLayers(126, 8, 2), 16);
  EXPECT_EQ(StageLayers(10, 2, 2, 0), 2 + 3);
  EXPECT_EQ(StageLayers(10, 2, 2, 1), 3 + 2);
  EXPECT_EQ(MaxStageLayers(126, 16, 1), 8);
  EXPECT_EQ(MaxStageLayers(32, 4, 1), 8);
}

TEST(Stages, ChunksPerStageOnlyWhenInterleaving) {
  Layout l;
  l.pipeline = 4;
  l.virtual_stages = 3;
  l.schedule = Schedule::OneFOneB;
  EXPECT_EQ(ChunksPerStage(l), 1);
  l.schedule = Schedule::Interleaved;
  EXPECT_EQ(ChunksPerStage(l), 3);
}

// Every pair: the chunks tile the layers in order, each holds at least
// one, they differ by at most one, the end chunks never hold more than a
// middle one, and the first-layer formula is the running sum.
TEST(Stages, EverySmallSplitTilesTheLayers) {
  for (int64_t layers = 1; layers <= 70; ++layers) {
    for (int64_t chunks = 1; chunks <= layers; ++chunks) {
      std::vector<int64_t> counts = ChunkLayerCounts(layers, chunks);
      SCOPED_TRACE(testing::Message() << layers << " layers, " << chunks << " chunks");
      ASSERT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), layers);
      auto [low, high] = std::minmax_element(counts.begin(), counts.end());
      EXPECT_GE(*low, 1);
      EXPECT_LE(*high - *low, 1);
      if (chunks > 2) {
        EXPECT_LE(counts.front(), *std::min_element(counts.begin() + 1, counts.end() - 1));
        EXPECT_LE(counts.back(), *std::max_element(counts.begin() + 1, counts.end() - 1));
      }
      int64_t first = 0;
      for (int64_t c = 0; c < chunks; ++c) {
        EXPECT_EQ(ChunkFirstLayer(layers, chunks, c), first) << "chunk " << c;
        first += counts[static_cast<size_t>(c)];
      }
    }
  }
}

// Over the stages, an untied model's parameters are counted exactly once.
TEST(Stages, StageParametersSumToTheModel) {
  ModelShape m;
  m.arch = Arch::Llama;
  m.layers = 126, m.hidden = 128, m.heads = 4, m.kv_heads = 2, m.ffn = 512, m.vocab = 1000, m.seq_len = 64;
  m.tied_embeddings = false;
  for (auto [pipeline, chunks] : {std::pair<int64_t, int64_t>{16, 1}, {8, 2}, {5, 3}, {7, 1}}) {
    int64_t sum = 0;
    for (int64_t s = 0; s < pipeline; ++s) sum += StageParamsPerRank(m, pipeline, 1, s, chunks);
    EXPECT_EQ(sum, CountParams(m).total) << pipeline << " stages x " << chunks << " chunks";
  }
  ParamCounts c = CountParams(m);
  EXPECT_EQ(StageParamsPerRank(m, 16, 1, 1), 8 * c.per_layer);
  EXPECT_EQ(StageParamsPerRank(m, 16, 1, 0), 7 * c.per_layer + c.embedding);
}

}  // namespace
}  // namespace avf::cost
