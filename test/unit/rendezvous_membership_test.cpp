// Elastic membership (rendezvous/membership.h): launchers as threads on one
// store; the host (slot 0) decides each round.
#include <atomic>
#include <thread>

#include "rendezvous/membership.h"
#include "rendezvous_test_util.h"

namespace avf::rendezvous::testing {
namespace {

auto Options(int slot, milliseconds last_call = 300ms) -> MembershipOptions {
  return {.slot = slot, .slots = 4, .counts = {2, 4}, .join_timeout = 1500ms, .last_call = last_call};
}

TEST(RendezvousMembership, DecisionsRoundTrip) {
  RoundResult r{.nodes = 3, .changes = 1, .slots = {0, 3, 1}};
  EXPECT_EQ(FormatDecision(r), "nodes 3 changes 1 slots 0,3,1");
  auto back = ParseDecision(FormatDecision(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->slots, r.slots);
  EXPECT_EQ(back->changes, 1);
  for (const char* bad : {"", "nodes 2 changes 0 slots 0", "nodes x changes 0 slots 0", "nodes 1 changes 0 slots -1",
                          "nodes 1 changes 0 slots 0 extra"}) {
    EXPECT_FALSE(ParseDecision(bad).has_value()) << bad;
  }
}

TEST(RendezvousMembership, EveryLauncherJoinsAndTheHostIsNodeZero) {
  auto t = StartTestServer(4);
  ASSERT_TRUE(t);
  std::vector<RoundResult> results(4);
  std::vector<std::thread> threads;
  for (int slot = 0; slot < 4; ++slot) {
    threads.emplace_back([&, slot] {
      auto c = StoreClient::Join(t->Options(slot, 4));
      ASSERT_TRUE(static_cast<bool>(c)) << ErrText(c.takeError());
      Membership m(**c, Options(slot, 10s));  // all four: no last call
      auto r = m.NextRound();
      ASSERT_TRUE(static_cast<bool>(r)) << ErrText(r.takeError());
      results[static_cast<size_t>(slot)] = *r;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(results[0].node_rank, 0);
  std::vector<int64_t> ranks;
  for (const RoundResult& r : results) {
    EXPECT_EQ(r.round, 1);
    EXPECT_EQ(r.nodes, 4);
    EXPECT_EQ(r.changes, 0);
    ranks.push_back(r.node_rank);
  }
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(ranks, (std::vector<int64_t>{0, 1, 2, 3}));
}

// Three of four: the largest count with a layout is 2; the third waits for
// the next round, which the host opens when the job ends or grows.
TEST(RendezvousMembership, ThreeLaunchersTrainOnTwoAndOneWaitsUntilTheEnd) {
  auto t = StartTestServer(4);
  ASSERT_TRUE(t);
  std::vector<RoundResult> results(3);
  std::atomic<int> waited_to_end{0};
  std::vector<std::thread> threads;
  for (int slot = 0; slot < 3; ++slot) {
    threads.emplace_back([&, slot] {
      auto c = StoreClient::Join(t->Options(slot, 4));
      ASSERT_TRUE(static_cast<bool>(c)) << ErrText(c.takeError());
      Membership m(**c, Options(slot));
      auto r = m.NextRound();
      ASSERT_TRUE(static_cast<bool>(r)) << ErrText(r.takeError());
      results[static_cast<size_t>(slot)] = *r;
      if (slot == 0) {
        std::this_thread::sleep_for(400ms);
        auto waiting = m.Waiting(r->round);
        ASSERT_TRUE(static_cast<bool>(waiting)) << ErrText(waiting.takeError());
        EXPECT_EQ(*waiting, 1);
        EXPECT_EQ(m.BestCount(r->nodes + *waiting), 2);  // 3 has no layout: no growing
        RDZV_OK(m.Finish(0));
      } else if (r->node_rank < 0) {
        auto next = m.NextRound();
        ASSERT_TRUE(static_cast<bool>(next)) << ErrText(next.takeError());
        if (next->done == 0) ++waited_to_end;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(results[0].nodes, 2);
  EXPECT_EQ(results[0].joined, 3);
  EXPECT_EQ(results[0].slots.size(), 2u);
  EXPECT_EQ(results[0].slots[0], 0);
  EXPECT_EQ(waited_to_end.load(), 1);
}

TEST(RendezvousMembership, FewerThanTheFewestFailsTheRoundForEveryone) {
  auto t = StartTestServer(4);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, 4)));
  Membership m(*c, Options(0));
  auto start = Clock::now();
  ExpectFailure(m.NextRound(), StoreErrc::kTimeout,
                {"round 1: 1 of the job's 4 node launchers joined within 1.5 s", "no fewer than 2 nodes"});
  EXPECT_LT(Clock::now() - start, 5s);
  // A launcher that comes later reads the failure, not a hang.
  RDZV_ASSIGN(auto late, StoreClient::Join(t->Options(1, 4)));
  Membership other(*late, Options(1));
  ExpectFailure(other.NextRound(), StoreErrc::kTimeout, {"no fewer than 2 nodes"});
}

TEST(RendezvousMembership, AFailedRoundIsFollowedByASmallerOneAndTheChangeIsCounted) {
  auto t = StartTestServer(4);
  ASSERT_TRUE(t);
  std::vector<std::unique_ptr<StoreClient>> clients;
  for (int slot = 0; slot < 4; ++slot) {
    auto c = StoreClient::Join(t->Options(slot, 4));
    ASSERT_TRUE(static_cast<bool>(c)) << ErrText(c.takeError());
    clients.push_back(std::move(*c));
  }
  std::vector<std::unique_ptr<Membership>> members;
  for (int slot = 0; slot < 4; ++slot) members.push_back(std::make_unique<Membership>(*clients[slot], Options(slot)));
  auto round = [&](std::vector<int> slots) {
    std::vector<RoundResult> out(slots.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < slots.size(); ++i) {
      threads.emplace_back([&, i] {
        auto r = members[static_cast<size_t>(slots[i])]->NextRound();
        ASSERT_TRUE(static_cast<bool>(r)) << ErrText(r.takeError());
        out[i] = *r;
      });
    }
    for (auto& th : threads) th.join();
    return out;
  };
  auto first = round({0, 1, 2, 3});
  EXPECT_EQ(first[0].nodes, 4);
  // Slot 3 is lost: rounds 2 has three launchers and trains on two.
  auto second = round({0, 1, 2});
  EXPECT_EQ(second[0].round, 2);
  EXPECT_EQ(second[0].nodes, 2);
  EXPECT_EQ(second[0].changes, 1);
  EXPECT_EQ(second[1].changes, 1);
}

}  // namespace
}  // namespace avf::rendezvous::testing
