// Tests for runtime/plan_format: the rank layout helper against tables
// written out by hand (never recomputed with the formula under test), the
// masked-orthogonal generation against Megatron's own examples, and the
// key and enum tables' invariants.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plan_format/launch.h"
#include "plan_format/plan_format.h"
#include "plan_format/rank_layout.h"
#include "plan_format/slices.h"

namespace avf::plan_format {
namespace {

using Groups = std::vector<Group>;

// T = 2, D = 2, P = 2: rank = t + 2 (d + 2 p).
constexpr Axes k222{2, 2, 2};

TEST(RankLayout, RankAndCoordinatesRoundTrip) {
  EXPECT_EQ(RankOf(k222, {0, 0, 0}), 0);
  EXPECT_EQ(RankOf(k222, {1, 0, 0}), 1);
  EXPECT_EQ(RankOf(k222, {0, 1, 0}), 2);
  EXPECT_EQ(RankOf(k222, {0, 0, 1}), 4);
  EXPECT_EQ(RankOf(k222, {1, 1, 1}), 7);
  EXPECT_EQ(CoordOf(k222, 6), (Coord{0, 1, 1}));
  Axes odd{3, 5, 7};
  for (int64_t r = 0; r < odd.world(); ++r) EXPECT_EQ(RankOf(odd, CoordOf(odd, r)), r);
}

TEST(RankLayout, AxisGroupsInPlanOrder) {
  EXPECT_EQ(AxisGroups(k222, Axis::Tensor), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(AxisGroups(k222, Axis::Data), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(AxisGroups(k222, Axis::Pipeline), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // T = 1, D = 3, P = 2.
  Axes a{1, 3, 2};
  EXPECT_EQ(AxisGroups(a, Axis::Tensor), (Groups{{0}, {1}, {2}, {3}, {4}, {5}}));
  EXPECT_EQ(AxisGroups(a, Axis::Data), (Groups{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(AxisGroups(a, Axis::Pipeline), (Groups{{0, 3}, {1, 4}, {2, 5}}));
}

TEST(RankLayout, EmbeddingGroupsPairFirstAndLastStage) {
  // T = 2, D = 1, P = 3: pipeline groups {0, 2, 4} and {1, 3, 5}.
  EXPECT_EQ(EmbeddingGroups({2, 1, 3}), (Groups{{0, 4}, {1, 5}}));
  EXPECT_TRUE(EmbeddingGroups({2, 4, 1}).empty());
}

// Megatron's docstring example: world 16, tp 2, dp 4, pp 2 (sizes fastest
// first), "dp" mask -> [[0,2,4,6],[1,3,5,7],[8,10,12,14],[9,11,13,15]];
// "tp-dp" mask -> [[0..7],[8..15]].
TEST(RankLayout, MaskedOrthogonalGroupsMatchMegatron) {
  EXPECT_EQ(MaskedOrthogonalGroups({2, 4, 2}, {false, true, false}),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(MaskedOrthogonalGroups({2, 4, 2}, {true, true, false}),
            (Groups{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}}));
  // Every rank exactly once, whatever the mask.
  for (int mask = 0; mask < 8; ++mask) {
    std::set<int64_t> seen;
    for (const Group& g : MaskedOrthogonalGroups({3, 2, 4}, {bool(mask & 1), bool(mask & 2), bool(mask & 4)})) {
      for (int64_t r : g) EXPECT_TRUE(seen.insert(r).second) << "mask " << mask << " rank " << r;
    }
    EXPECT_EQ(seen.size(), 24u) << "mask " << mask;
  }
}

TEST(RankLayout, PlacementAndRanksPerNode) {
  Place p = PlaceOf(19, 8, 2);  // node 2, GPU 3, leaf 1
  EXPECT_EQ(p.node, 2);
  EXPECT_EQ(p.gpu, 3);
  EXPECT_EQ(p.leaf, 1);
  EXPECT_EQ(PlaceOf(19, 8, 0).leaf, 0);  // one flat switch
  EXPECT_EQ(NodesFor(17, 8), 3);
  EXPECT_EQ(NodesFor(16, 8), 2);
  EXPECT_EQ(RanksPerNode(32, 8), 8);
  EXPECT_EQ(RanksPerNode(2, 8), 2);  // a job smaller than its node
  EXPECT_EQ(RanksPerNode(1, 1), 1);
}

TEST(PlanFormat, EnumSpellingsRoundTrip) {
  EXPECT_EQ(Spelling(PipelineSchedule::OneFOneB), "one_f_one_b");
  EXPECT_EQ(Spelling(TokenFormat::U32), "tokens_u32");
  EXPECT_EQ(Spelling(static_cast<Arch>(7)), "?");
  EXPECT_EQ(ParseEnum<StorageKind>("lustre"), StorageKind::Lustre);
  EXPECT_EQ(ParseEnum<StorageKind>("Lustre"), std::nullopt);
  EXPECT_EQ(EnumChoices<Precision>(), "`bf16`, `fp16` or `fp32`");
  for (size_t i = 0; i < EnumCount<StorageKind>(); ++i) {
    auto v = static_cast<StorageKind>(i);
    EXPECT_EQ(ParseEnum<StorageKind>(Spelling(v)), v);
  }
}

// Each row's Id is its index (Info() relies on it), every parent is an
// object-like key, and no object holds one spelling twice.
TEST(PlanFormat, KeyTableIsWellFormed) {
  std::set<std::pair<Key, std::string_view>> seen;
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    const KeyInfo& k = kKeys[i];
    EXPECT_EQ(static_cast<size_t>(k.id), i);
    if (k.id == Key::Root || k.id == Key::Shared) continue;
    ValueType parent = Info(k.parent).type;
    EXPECT_TRUE(parent == ValueType::Object || parent == ValueType::ObjectOrNull || parent == ValueType::Objects ||
                parent == ValueType::ObjectsOrEmpty || parent == ValueType::SharedObject)
        << KeyPath(k.id);
    EXPECT_TRUE(seen.insert({k.parent, k.spelling}).second) << "twice: " << KeyPath(k.id);
    bool is_enum = k.type == ValueType::Enum || k.type == ValueType::EnumOrNull;
    EXPECT_EQ(is_enum, k.choices.count > 0) << KeyPath(k.id);
  }
  EXPECT_EQ(KeyPath(Key::RankTensor), "ranks[].tensor");
  EXPECT_EQ(KeyPath(Key::SpanNodes), "predicted.data_group_span.nodes");
  EXPECT_TRUE(Nullable(Key::CheckpointKeep));
  EXPECT_FALSE(Nullable(Key::LayoutZero));
  EXPECT_TRUE(Optional(Key::GroupsEmbedding));
}

// The flags aviflowc run and avf-run both take, checked by one function each.
TEST(PlanFormat, KeysOfEachVersion) {
  // Version 2 lists the tables version 3 derives; their children go with them.
  for (Key k : {Key::Ranks, Key::RankTensor, Key::Groups, Key::GroupsEmbedding, Key::DataSlices,
                Key::DataSliceFirstSequence, Key::ZeroSlices, Key::ZeroSliceCount}) {
    EXPECT_TRUE(InVersion(k, 2)) << KeyPath(k);
    EXPECT_FALSE(InVersion(k, 3)) << KeyPath(k);
  }
  EXPECT_FALSE(InVersion(Key::HardwareLeavesPerSpine, 2));
  EXPECT_TRUE(InVersion(Key::HardwareLeavesPerSpine, 3));
  for (Key k : {Key::Version, Key::Data, Key::DataTokens, Key::Zero, Key::ZeroStage, Key::StageFirstLayer}) {
    EXPECT_TRUE(InVersion(k, 2) && InVersion(k, 3)) << KeyPath(k);
  }
  EXPECT_FALSE(InVersion(Key::LayoutData, kOldestFormatVersion - 1));
  EXPECT_FALSE(InVersion(Key::LayoutData, kFormatVersion + 1));
}

TEST(Slices, DataRanksShareEveryGlobalBatch) {
  EXPECT_EQ(DataSliceOf(64, 4, 0).first, 0);
  EXPECT_EQ(DataSliceOf(64, 4, 3).first, 48);
  EXPECT_EQ(DataSliceOf(64, 4, 3).count, 16);
}

TEST(Slices, ZeroSlicesCoverTheStageOnce) {
  for (int64_t elements : {int64_t{1} << 40, int64_t{1003884544}, int64_t{7}}) {
    for (int64_t data : {1, 3, 16, 6250}) {
      int64_t next = 0;
      for (int64_t d = 0; d < data; ++d) {
        Slice s = ZeroSliceOf(elements, data, d);
        EXPECT_EQ(s.first, next);
        EXPECT_EQ(s.count, elements / data + (d + 1 == data ? elements % data : 0));
        next = s.first + s.count;
      }
      EXPECT_EQ(next, elements) << elements << " over " << data;
    }
  }
}

TEST(LaunchFlags, SecondsAreFiniteAndInRange) {
  EXPECT_EQ(SecondsProblem("60"), "");
  EXPECT_EQ(SecondsProblem("0.1"), "");
  EXPECT_EQ(SecondsProblem("86400"), "");
  for (const char* bad : {"", "nan", "inf", "-1", "0", "86401", "5s", "1e9"}) {
    EXPECT_NE(SecondsProblem(bad), "") << bad;
  }
  EXPECT_EQ(SecondsProblem("nan"), "`nan` is not a number of seconds from 0.1 to 86400");
}

TEST(LaunchFlags, SeedsAreUnsigned64BitNumbers) {
  EXPECT_EQ(SeedProblem("0"), "");
  EXPECT_EQ(SeedProblem("18446744073709551615"), "");
  for (const char* bad : {"", "-5", "+5", "18446744073709551616", "1.5", "0x10", " 7"}) {
    EXPECT_NE(SeedProblem(bad), "") << bad;
  }
  EXPECT_EQ(SeedProblem("-5"), "`-5` is not a seed: a whole number from 0 to 18446744073709551615");
}

TEST(CheckpointInterval, DurationElseStepsAtThePredictedStepTime) {
  EXPECT_DOUBLE_EQ(PredictedCheckpointInterval(1800.0, std::nullopt, 2.5), 1800.0);
  EXPECT_DOUBLE_EQ(PredictedCheckpointInterval(std::nullopt, 400, 2.5), 1000.0);
  EXPECT_DOUBLE_EQ(PredictedCheckpointInterval(std::nullopt, std::nullopt, 2.5), 0.0);
}

}  // namespace
}  // namespace avf::plan_format
