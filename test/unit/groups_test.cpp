// Process groups (runtime/parallel/groups.h) on forked ranks: hand-made plans
// of several (T, D, P, V) shapes, whose groups are built here as
// docs/plan-format.md defines them (and checked against one hand-written
// table). Every rank checks that each of its communicators has the plan's
// size and rank, reduces, broadcasts and gathers exactly the plan group's
// members in ring order, and that every pipeline link carries messages from
// its sender to its receiver, both directions at once (a sender thread and
// the main thread). A communicator's failure is checked in-process with a
// stub world. (A plan whose groups are wrong never gets here: ValidatePlan
// refuses it, runplan_validate_test.cpp.)
#include "parallel/groups.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "comm/errors.h"
#include "forked_ranks.h"
#include "plan_builder.h"

namespace avf::parallel {
namespace {

using comm::Communicator;
using comm::testing::ExpectAllOk;
using comm::testing::RunRanks;
using comm::testing::Text;
using runtime::PipelineSchedule;
using runtime::RankGroup;
using runtime::RunPlan;

// A plan shape: T, D, P, model chunks V, tied embeddings, the schedule.
struct Shape {
  int64_t tensor = 1, data = 1, pipeline = 1, chunks = 1;
  bool tied = false;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
};

auto ShapeName(const Shape& s) -> std::string {
  return fmt::format("T{}D{}P{}V{}{}{}", s.tensor, s.data, s.pipeline, s.chunks, s.tied ? "Tied" : "",
                     s.schedule == PipelineSchedule::Interleaved ? "Interleaved" : "");
}

// gtest prints a failing test's Shape parameter with this (found by ADL).
void PrintTo(const Shape& s, std::ostream* os) { *os << ShapeName(s); }

// The shared plan builder (plan_builder.h), with as many layers as the
// pipeline has chunks and P micro-batches per step.
auto BuilderShape(const Shape& s) -> testing::PlanShape {
  testing::PlanShape p{
      .tensor = s.tensor, .data = s.data, .pipeline = s.pipeline, .chunks = s.chunks, .schedule = s.schedule};
  p.model.tied_embeddings = s.tied;
  p.model.layers = s.pipeline * s.chunks;
  p.micro_batches = s.pipeline;  // interleaving runs micro-batches in groups of P
  return p;
}
auto MakePlan(const Shape& s) -> RunPlan { return testing::MakePlan(BuilderShape(s)); }
auto Valid(const Shape& s) -> runtime::ValidPlan { return testing::MakeValidPlan(BuilderShape(s)); }

TEST(GroupsPlan, TheHelperMatchesTheHandWrittenTable) {
  RunPlan p = MakePlan({.tensor = 2, .data = 2, .pipeline = 2, .tied = true});
  using G = std::vector<RankGroup>;
  EXPECT_EQ(p.groups.tensor, (G{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(p.groups.data, (G{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(p.groups.pipeline, (G{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(p.groups.embedding, (G{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  ASSERT_EQ(p.ranks.size(), 8u);
  const int64_t coords[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(p.ranks[r].rank, r);
    EXPECT_EQ((RankCoords{p.ranks[r].tensor, p.ranks[r].data, p.ranks[r].pipeline}),
              (RankCoords{coords[r][0], coords[r][1], coords[r][2]}))
        << "rank " << r;
  }
  // T = 2, D = 1, P = 4, untied: pipeline groups are every other rank, no embedding.
  RunPlan q = MakePlan({.tensor = 2, .pipeline = 4});
  EXPECT_EQ(q.groups.data, (G{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  EXPECT_EQ(q.groups.pipeline, (G{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_TRUE(q.groups.embedding.empty());
}

TEST(GroupsLinks, DirectedPairsInTheDocumentedOrder) {
  using L = std::vector<StageLink>;
  EXPECT_EQ(PipelineLinks(1, false), L{});
  EXPECT_EQ(PipelineLinks(1, true), L{});
  EXPECT_EQ(PipelineLinks(2, false), (L{{0, 1}, {1, 0}}));
  // P = 2: the wrap-around pairs are the neighbour pairs; no duplicates.
  EXPECT_EQ(PipelineLinks(2, true), (L{{0, 1}, {1, 0}}));
  EXPECT_EQ(PipelineLinks(3, true), (L{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 0}, {0, 2}}));
  EXPECT_EQ(PipelineLinks(4, false), (L{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}}));
  EXPECT_EQ(PipelineLinks(4, true), (L{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {3, 0}, {0, 3}}));
}

TEST(GroupsLinks, OnlyInterleavingWithSeveralChunksWrapsAround) {
  auto plan = [](int64_t chunks, PipelineSchedule kind) {
    return MakePlan({.pipeline = 4, .chunks = chunks, .schedule = kind});
  };
  EXPECT_TRUE(HasWrapAround(plan(2, PipelineSchedule::Interleaved)));
  EXPECT_FALSE(HasWrapAround(plan(1, PipelineSchedule::Interleaved)));
  EXPECT_FALSE(HasWrapAround(plan(2, PipelineSchedule::OneFOneB)));
  EXPECT_FALSE(HasWrapAround(plan(2, PipelineSchedule::Gpipe)));
}

// The group of `groups` holding world rank `me` ({} when none).
auto GroupOf(const std::vector<RankGroup>& groups, int me) -> RankGroup {
  for (const RankGroup& g : groups) {
    if (std::find(g.begin(), g.end(), me) != g.end()) return g;
  }
  return {};
}

// `c` is the communicator of `group` (world ranks in ring order) on world
// rank `me`: size, rank, an AllReduce of the world ranks, a Broadcast from
// its rank 0 and an AllGather of the world ranks (the ring order itself).
auto CheckGroup(Communicator* c, const RankGroup& group, int me, std::string_view kind) -> std::string {
  if (group.empty()) return c ? fmt::format("{}: a communicator outside every group", kind) : "";
  if (!c) return fmt::format("{}: no communicator", kind);
  int64_t position = std::find(group.begin(), group.end(), me) - group.begin();
  if (c->size() != static_cast<int>(group.size()) || c->rank() != position) {
    return fmt::format("{}: rank {} of {}, expected {} of {}", kind, c->rank(), c->size(), position, group.size());
  }
  float sum = static_cast<float>(me), want_sum = 0;
  for (int64_t m : group) want_sum += static_cast<float>(m);
  if (auto e = c->AllReduce(&sum, 1, comm::ReduceOp::kSum)) return fmt::format("{}: {}", kind, Text(std::move(e)));
  if (sum != want_sum) return fmt::format("{}: AllReduce gave {}, the members sum to {}", kind, sum, want_sum);
  float value = static_cast<float>(me * 10 + 7);
  if (auto e = c->Broadcast(&value, 1, 0)) return fmt::format("{}: {}", kind, Text(std::move(e)));
  if (value != static_cast<float>(group[0] * 10 + 7)) return fmt::format("{}: Broadcast gave {}", kind, value);
  float mine = static_cast<float>(me);
  std::vector<float> all(group.size(), -1);
  if (auto e = c->AllGather(&mine, all.data(), 1)) return fmt::format("{}: {}", kind, Text(std::move(e)));
  for (size_t i = 0; i < group.size(); ++i) {
    if (all[i] != static_cast<float>(group[i])) return fmt::format("{}: AllGather block {} is {}", kind, i, all[i]);
  }
  return "";
}

// Large enough that a Send waits for its receiver (more than the socket
// buffers), so the two directions really overlap.
constexpr size_t kLinkFloats = size_t{1} << 18;
constexpr int kLinkRounds = 2;

// Message `round` of the link from -> to, sent by world rank `sender`.
auto LinkValue(StageLink link, int64_t sender, int round, size_t i) -> float {
  if (i == 0) return static_cast<float>(link.from);
  if (i == 1) return static_cast<float>(link.to);
  if (i == 2) return static_cast<float>(sender);
  return static_cast<float>((i * 31 + static_cast<size_t>(round) * 17 + link.from * 7 + link.to * 3) % 1000);
}

// Every link of this rank's stage exists with the right ranks, and no other.
auto CheckLinkSet(const RankGroups& g, const std::vector<StageLink>& pairs) -> std::string {
  int64_t me = g.coords.pipeline;
  std::set<StageLink> want(pairs.begin(), pairs.end());
  for (int64_t q = -1; q <= g.stages; ++q) {
    Communicator* send = g.SendLink(q);
    Communicator* recv = g.RecvLink(q);
    if ((send != nullptr) != want.contains({me, q})) return fmt::format("SendLink({}) is {}", q, fmt::ptr(send));
    if ((recv != nullptr) != want.contains({q, me})) return fmt::format("RecvLink({}) is {}", q, fmt::ptr(recv));
    if (send && (send->size() != 2 || send->rank() != 0)) {
      return fmt::format("SendLink({}) is rank {} of {}", q, send->rank(), send->size());
    }
    if (recv && (recv->size() != 2 || recv->rank() != 1)) {
      return fmt::format("RecvLink({}) is rank {} of {}", q, recv->rank(), recv->size());
    }
  }
  return "";
}

// A sender thread sends on every SendLink while this thread receives on every
// RecvLink, both in `pairs` order (so the lowest unfinished link always has
// both ends at it: no deadlock), kLinkRounds messages each.
auto CheckLinkTraffic(const RankGroups& g, const RunPlan& plan, const std::vector<StageLink>& pairs) -> std::string {
  const int64_t me = g.coords.pipeline;
  const RankGroup& pipe = GroupOf(plan.groups.pipeline, g.world_rank);
  std::string sent;
  std::thread sender([&] {
    std::vector<float> buf(kLinkFloats);
    for (int round = 0; round < kLinkRounds && sent.empty(); ++round) {
      for (StageLink l : pairs) {
        if (l.from != me) continue;
        for (size_t i = 0; i < buf.size(); ++i) buf[i] = LinkValue(l, g.world_rank, round, i);
        if (auto e = g.SendLink(l.to)->Send(buf.data(), buf.size(), 1)) sent = Text(std::move(e));
        if (!sent.empty()) break;
      }
    }
  });
  std::string got;
  std::vector<float> buf(kLinkFloats);
  for (int round = 0; round < kLinkRounds && got.empty(); ++round) {
    for (StageLink l : pairs) {
      if (l.to != me) continue;
      if (auto e = g.RecvLink(l.from)->Recv(buf.data(), buf.size(), 0)) got = Text(std::move(e));
      for (size_t i = 0; got.empty() && i < buf.size(); ++i) {
        float want = LinkValue(l, pipe[l.from], round, i);
        if (buf[i] != want) {
          got = fmt::format("link {} -> {} round {}: element {} is {}, expected {}", l.from, l.to, round, i, buf[i],
                            want);
        }
      }
      if (!got.empty()) break;
    }
  }
  sender.join();
  return !got.empty() ? "recv: " + got : sent.empty() ? "" : "send: " + sent;
}

// What one rank checks on the groups of `plan`.
auto CheckRank(Communicator& world, const runtime::ValidPlan& valid) -> std::string {
  const RunPlan& plan = *valid;
  auto built = BuildGroups(world, valid);
  if (!built) return "BuildGroups: " + Text(built.takeError());
  RankGroups& g = *built;
  const int me = world.rank();
  const runtime::PlanRank& pr = plan.ranks[me];
  if (g.world_rank != me || g.coords != RankCoords{pr.tensor, pr.data, pr.pipeline} ||
      g.stages != plan.layout.pipeline) {
    return fmt::format("coordinates ({}, {}, {}) of rank {}", g.coords.tensor, g.coords.data, g.coords.pipeline,
                       g.world_rank);
  }
  const auto& groups = plan.groups;
  for (auto [c, list, kind] :
       {std::tuple{g.tensor.get(), &groups.tensor, "tensor"}, std::tuple{g.data.get(), &groups.data, "data"},
        std::tuple{g.pipeline.get(), &groups.pipeline, "pipeline"},
        std::tuple{g.embedding.get(), &groups.embedding, "embedding"}}) {
    if (auto s = CheckGroup(c, GroupOf(*list, me), me, kind); !s.empty()) return s;
  }
  // Only the first and last stage of a tied plan with P > 1 sum embeddings.
  int64_t P = plan.layout.pipeline, p = pr.pipeline;
  bool embeds = plan.model.tied_embeddings && P > 1 && (p == 0 || p == P - 1);
  if ((g.embedding != nullptr) != embeds) {
    return fmt::format("embedding group {} on stage {}", embeds ? "missing" : "present", p);
  }
  auto pairs = PipelineLinks(P, HasWrapAround(plan));
  if (auto s = CheckLinkSet(g, pairs); !s.empty()) return s;
  return CheckLinkTraffic(g, plan, pairs);
}

class GroupsRanks : public ::testing::TestWithParam<Shape> {};

TEST_P(GroupsRanks, EveryCommunicatorHoldsThePlansMembersInRingOrder) {
  runtime::ValidPlan plan = Valid(GetParam());
  int n = static_cast<int>(plan->ranks.size());
  ExpectAllOk(RunRanks(n, [&plan](Communicator& world) { return CheckRank(world, plan); }));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GroupsRanks,
    ::testing::Values(Shape{}, Shape{.tensor = 2}, Shape{.data = 2, .pipeline = 2, .tied = true},
                      Shape{.tensor = 2, .data = 2, .pipeline = 2, .tied = true},
                      Shape{.pipeline = 4, .chunks = 2, .schedule = PipelineSchedule::Interleaved},
                      Shape{.tensor = 2, .pipeline = 4, .tied = true},
                      Shape{.pipeline = 2, .chunks = 2, .tied = true, .schedule = PipelineSchedule::Interleaved},
                      Shape{.pipeline = 3, .chunks = 3, .tied = true, .schedule = PipelineSchedule::Interleaved},
                      Shape{.pipeline = 4, .chunks = 2}, Shape{.data = 8}),
    [](const ::testing::TestParamInfo<Shape>& info) { return ShapeName(info.param); });

// A world whose first Split fails (and whose other calls must not happen).
class StubWorld final : public Communicator {
 public:
  StubWorld(int rank, int size) : rank_(rank), size_(size) {}
  auto rank() const -> int override { return rank_; }
  auto size() const -> int override { return size_; }
  auto AllReduce(void*, size_t, comm::DataType, comm::ReduceOp) -> llvm::Error override { return Unused(); }
  auto ReduceScatter(const void*, void*, size_t, comm::DataType, comm::ReduceOp) -> llvm::Error override {
    return Unused();
  }
  auto AllGather(const void*, void*, size_t, comm::DataType) -> llvm::Error override { return Unused(); }
  auto Broadcast(void*, size_t, comm::DataType, int) -> llvm::Error override { return Unused(); }
  auto Send(const void*, size_t, comm::DataType, int) -> llvm::Error override { return Unused(); }
  auto Recv(void*, size_t, comm::DataType, int) -> llvm::Error override { return Unused(); }
  auto SendRecv(const void*, size_t, int, void*, size_t, int, comm::DataType) -> llvm::Error override {
    return Unused();
  }
  auto Barrier() -> llvm::Error override { return Unused(); }
  auto Split(int, int) -> llvm::Expected<std::unique_ptr<Communicator>> override {
    ++splits;
    return comm::MakeError(comm::CommErrc::kTimeout, "rank 1 did not answer within 2 s");
  }
  int splits = 0;

 private:
  static auto Unused() -> llvm::Error { return comm::MakeError(comm::CommErrc::kIo, "unused"); }
  int rank_, size_;
};

// BuildGroups' failure on `world`: its code and message.
auto Failure(StubWorld& world, const runtime::ValidPlan& plan) -> comm::Failure {
  auto built = BuildGroups(world, plan);
  if (built) {
    ADD_FAILURE() << "BuildGroups succeeded";
    return {};
  }
  return comm::TakeFailure(built.takeError());
}

TEST(GroupsErrors, ASplitFailureNamesTheGroupAndKeepsItsCode) {
  runtime::ValidPlan plan = Valid({.tensor = 2, .data = 2});
  StubWorld world(3, 4);
  comm::Failure f = Failure(world, plan);
  EXPECT_EQ(f.code, comm::CommErrc::kTimeout);
  EXPECT_EQ(f.message, "building the tensor group groups.tensor[1] (ranks 2-3): rank 1 did not answer within 2 s");
  EXPECT_EQ(world.splits, 1);
}

}  // namespace
}  // namespace avf::parallel
