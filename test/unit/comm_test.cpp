// The CPU communicator across real processes: every rank is a forked child
// with its own store client and mesh on 127.0.0.1, meeting through a
// rendezvous store served by the parent (started after the forks, so no lock
// is held across fork()). Each child checks its own results against a serial
// reference, bit for bit (fp32 and bf16), and reports "" or what went wrong
// through a socket pair before _exit().
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <ostream>
#include <thread>
#include <tuple>

#include "comm/mesh.h"
#include "comm/tcp_communicator.h"
#include "forked_ranks.h"
#include "rendezvous/wire.h"

namespace avf::comm {

// gtest prints a failing test's DataType parameter with this (found by ADL).
void PrintTo(DataType type, std::ostream* os) { *os << DataTypeName(type); }

namespace {

using namespace std::chrono_literals;
using rendezvous::net::Clock;
namespace net = rendezvous::net;
using namespace comm::testing;

// Rank r's i-th input: mostly values near 1, every fifth ±1e8, so that float
// sums depend on the order (1e8 + 1 - 1e8 is 0, 1e8 - 1e8 + 1 is 1).
auto Value(int r, size_t i) -> float {
  if ((i * 7 + static_cast<size_t>(r) * 3) % 5 == 0) return r % 2 ? -1e8f : 1e8f;
  return 1.0f + 0.37f * static_cast<float>(r) + 1e-4f * static_cast<float>(i % 1000);
}

// The element types, widened to the fp32 the reductions accumulate in and
// rounded back once.
auto Widen(float x) -> float { return x; }
auto Widen(Bf16 x) -> float { return ToFloat(x); }
auto Bits(float x) -> uint32_t { return std::bit_cast<uint32_t>(x); }
auto Bits(Bf16 x) -> uint32_t { return x.bits; }
template <Element T>
auto Narrow(float x) -> T {
  if constexpr (std::same_as<T, float>) {
    return x;
  } else {
    return ToBf16(x);
  }
}

// Rank r's i-th bf16 input. Values of 8 significant bits cannot show the order
// by rounding in the last fp32 bit (their sums are exact until they meet 1e8),
// and bf16 drops it anyway, so the ±1e8 come in pairs that cancel: +1e8 on
// rank r and -1e8 on rank r + 1 where (i + r) % 5 == 0. In rank order the sum
// swallows only the values added before the pair (1.4 + 1e8 - 1e8 + 2.1 is
// 2.1), in another order others (2.1 - 1e8 + 1e8 + 1.4 is 1.4): a difference
// the one bf16 rounding keeps. The values near 1 need 9 bits when summed, so
// rounding each partial sum to bf16 would show too.
auto Bf16Value(int r, size_t i) -> Bf16 {
  size_t k = (i + static_cast<size_t>(r)) % 5;
  if (k < 2) return ToBf16(k == 0 ? 1e8f : -1e8f);
  return ToBf16(1.0f + 0.37f * static_cast<float>(r) + 0.01f * static_cast<float>(i % 100));
}

template <Element T>
auto Input(int r, size_t i) -> T {
  if constexpr (std::same_as<T, float>) {
    return Value(r, i);
  } else {
    return Bf16Value(r, i);
  }
}

// The serial reference: ((x_m0 + x_m1) + ...) in fp32 over `members` in order,
// then / n for Avg, then rounded to T once.
template <Element T>
auto Serial(std::span<const int> members, size_t i, ReduceOp op) -> T {
  float acc = Widen(Input<T>(members[0], i));
  for (size_t k = 1; k < members.size(); ++k) acc += Widen(Input<T>(members[k], i));
  return Narrow<T>(op == ReduceOp::kAvg ? acc / static_cast<float>(members.size()) : acc);
}

auto Iota(int n) -> std::vector<int> {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

// "" when got[i] has the bits of want(i) for every i.
template <Element T>
auto Compare(std::span<const T> got, const std::function<T(size_t)>& want, std::string_view what) -> std::string {
  for (size_t i = 0; i < got.size(); ++i) {
    T w = want(i);
    if (Bits(got[i]) != Bits(w)) {
      return fmt::format("{} {}: element {} is {} (0x{:x}), the serial order gives {} (0x{:x})",
                         DataTypeName(kDataTypeOf<T>), what, i, Widen(got[i]), Bits(got[i]), Widen(w), Bits(w));
    }
  }
  return "";
}

// AllReduce of `count` values on `comm`, whose ranks are `members` (world ranks) in order.
template <Element T>
auto CheckAllReduce(Communicator& comm, std::span<const int> members, size_t count, ReduceOp op) -> std::string {
  int me = members[comm.rank()];
  std::vector<T> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = Input<T>(me, i);
  if (auto e = comm.AllReduce(data.data(), count, op)) return Text(std::move(e));
  return Compare<T>(
      data, [&](size_t i) { return Serial<T>(members, i, op); },
      fmt::format("AllReduce {} of {} on {} ranks", ReduceOpName(op), count, members.size()));
}

// ReduceScatter of blocks of `per` on `comm` (ranks `members`), then AllGather
// of them, out of place and in place.
template <Element T>
auto CheckScatterGather(Communicator& comm, std::span<const int> members, size_t per) -> std::string {
  const int n = comm.size(), me = comm.rank(), world = members[me];
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
    std::vector<T> in(per * n), out(per, Narrow<T>(-1.0f));
    for (size_t i = 0; i < in.size(); ++i) in[i] = Input<T>(world, i);
    if (auto e = comm.ReduceScatter(in.data(), out.data(), per, op)) return Text(std::move(e));
    auto s = Compare<T>(
        out, [&](size_t i) { return Serial<T>(members, per * me + i, op); }, "ReduceScatter");
    if (!s.empty()) return s;
  }
  std::vector<T> mine(per), all(per * n);
  for (size_t i = 0; i < per; ++i) mine[i] = Input<T>(world, i);
  if (auto e = comm.AllGather(mine.data(), all.data(), per)) return Text(std::move(e));
  // In place: this rank's block of `all` is the input.
  if (auto e = comm.AllGather(all.data() + per * me, all.data(), per)) return Text(std::move(e));
  return Compare<T>(
      all, [&](size_t i) { return Input<T>(members[i / per], i % per); }, "AllGather");
}

// Runs body(T{}) in a rank, with T the element type of `type`.
template <class F>
auto ForType(DataType type, F&& body) -> std::string {
  return type == DataType::kBF16 ? body(Bf16{}) : body(float{});
}

TEST(CommReference, TheInputsMakeTheOrderVisible) {
  std::vector<int> order{0, 1, 2, 3}, reversed{3, 2, 1, 0};
  int differ = 0;
  for (size_t i = 0; i < 100; ++i) {
    differ += Serial<float>(order, i, ReduceOp::kSum) != Serial<float>(reversed, i, ReduceOp::kSum);
  }
  EXPECT_GT(differ, 0);
  // Two bf16 sums are the same in either order, so from 3 ranks on.
  for (int n : {3, 4}) {
    std::vector<int> forward = Iota(n), backward(forward.rbegin(), forward.rend());
    int differ_bf16 = 0;
    for (size_t i = 0; i < 100; ++i) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
        differ_bf16 += Serial<Bf16>(forward, i, op).bits != Serial<Bf16>(backward, i, op).bits;
      }
    }
    EXPECT_GT(differ_bf16, 0) << n << " ranks";
  }
}

// bf16 rounding after every addition, or before dividing for Avg (on 3 ranks:
// dividing by 4 is exact), instead of once at the end: the collectives'
// results would differ on these inputs.
TEST(CommReference, TheInputsMakeTheSingleBf16RoundingVisible) {
  for (int n : {3, 4}) {
    std::vector<int> members = Iota(n);
    int per_step = 0, before_divide = 0;
    for (size_t i = 0; i < 1000; ++i) {
      float acc = ToFloat(Input<Bf16>(0, i));
      for (int r = 1; r < n; ++r) acc = ToFloat(ToBf16(acc + ToFloat(Input<Bf16>(r, i))));
      per_step += ToBf16(acc).bits != Serial<Bf16>(members, i, ReduceOp::kSum).bits;
      Bf16 sum = Serial<Bf16>(members, i, ReduceOp::kSum);
      Bf16 avg = ToBf16(ToFloat(sum) / static_cast<float>(n));
      before_divide += avg.bits != Serial<Bf16>(members, i, ReduceOp::kAvg).bits;
    }
    EXPECT_GT(per_step, 0) << n << " ranks";
    if (n == 3) {
      EXPECT_GT(before_divide, 0);
    }
  }
}

class CommRanks : public ::testing::TestWithParam<std::tuple<int, DataType>> {};

TEST_P(CommRanks, AllReduceIsBitIdenticalToTheSerialRankOrder) {
  const int n = std::get<0>(GetParam());
  const DataType type = std::get<1>(GetParam());
  ExpectAllOk(RunRanks(n, [n, type](Communicator& c) {
    return ForType(type, [&]<Element T>(T) -> std::string {
      std::vector<int> members = Iota(n);
      for (size_t count : {size_t{1}, size_t{3}, size_t{7}, size_t{1000003}}) {
        if (auto s = CheckAllReduce<T>(c, members, count, ReduceOp::kSum); !s.empty()) return s;
      }
      if (auto s = CheckAllReduce<T>(c, members, 7, ReduceOp::kAvg); !s.empty()) return s;
      return CheckAllReduce<T>(c, members, 1001, ReduceOp::kAvg);
    });
  }));
}

TEST_P(CommRanks, ReduceScatterAndAllGather) {
  const int n = std::get<0>(GetParam());
  const DataType type = std::get<1>(GetParam());
  ExpectAllOk(RunRanks(n, [n, type](Communicator& c) {
    return ForType(type, [&]<Element T>(T) -> std::string {
      for (size_t per : {size_t{1}, size_t{7}, size_t{1001}}) {
        if (auto s = CheckScatterGather<T>(c, Iota(n), per); !s.empty()) return s;
      }
      return "";
    });
  }));
}

TEST_P(CommRanks, BroadcastFromTheLastRank) {
  const int n = std::get<0>(GetParam());
  const DataType type = std::get<1>(GetParam());
  ExpectAllOk(RunRanks(n, [n, type](Communicator& c) {
    return ForType(type, [&]<Element T>(T) -> std::string {
      std::vector<T> data(100003);
      for (size_t i = 0; i < data.size(); ++i) data[i] = Input<T>(c.rank(), i);
      if (auto e = c.Broadcast(data.data(), data.size(), n - 1)) return Text(std::move(e));
      return Compare<T>(
          data, [&](size_t i) { return Input<T>(n - 1, i); }, "Broadcast");
    });
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommRanks,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values(DataType::kF32, DataType::kBF16)),
                         [](const auto& info) {
                           return fmt::format("n{}_{}", std::get<0>(info.param), DataTypeName(std::get<1>(info.param)));
                         });

// A barrier carries no data, so it runs once per rank count.
class CommBarrier : public ::testing::TestWithParam<int> {};

TEST_P(CommBarrier, WaitsForTheLastRank) {
  const int n = GetParam();
  ExpectAllOk(RunRanks(n, [n](Communicator& c) -> std::string {
    if (auto e = c.Barrier()) return Text(std::move(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(60 * c.rank()));
    auto start = Clock::now();
    if (auto e = c.Barrier()) return Text(std::move(e));
    auto waited = Clock::now() - start;
    if (c.rank() == 0 && n > 1 && waited < std::chrono::milliseconds(60 * (n - 1) - 20)) {
      return fmt::format("rank 0 left the barrier after {} ms",
                         std::chrono::duration_cast<milliseconds>(waited).count());
    }
    return "";
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommBarrier, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return fmt::format("n{}", info.param); });

// Around the ring with SendRecv, then ordered Sends and Recvs, on 2-4 ranks.
template <Element T>
auto PointToPoint(Communicator& c) -> std::string {
  const int n = c.size(), me = c.rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
  // 4 MiB of fp32 (2 of bf16) and an odd tail each way at once: no rank sends first.
  std::vector<T> out((1 << 20) + 3), in((1 << 20) + 3);
  for (size_t i = 0; i < out.size(); ++i) out[i] = Input<T>(me, i);
  if (auto e = c.SendRecv(out.data(), out.size(), next, in.data(), in.size(), prev)) return Text(std::move(e));
  if (auto s = Compare<T>(
          in, [&](size_t i) { return Input<T>(prev, i); }, "SendRecv");
      !s.empty())
    return s;
  // Two small messages in order: even ranks send first, odd ranks receive first.
  std::vector<T> a(3), b(1), ra(3), rb(1);
  for (size_t i = 0; i < 3; ++i) a[i] = Input<T>(me, 10 + i);
  b[0] = Input<T>(me, 20);
  auto send = [&]() -> llvm::Error {
    if (auto e = c.Send(a.data(), a.size(), next)) return e;
    return c.Send(b.data(), b.size(), next);
  };
  auto recv = [&]() -> llvm::Error {
    if (auto e = c.Recv(ra.data(), ra.size(), prev)) return e;
    return c.Recv(rb.data(), rb.size(), prev);
  };
  bool first = me % 2 == 0;
  if (auto e = first ? send() : recv()) return Text(std::move(e));
  if (auto e = first ? recv() : send()) return Text(std::move(e));
  if (auto s = Compare<T>(
          ra, [&](size_t i) { return Input<T>(prev, 10 + i); }, "Send");
      !s.empty())
    return s;
  return Compare<T>(
      rb, [&](size_t) { return Input<T>(prev, 20); }, "the second Send");
}

class CommPointToPoint : public ::testing::TestWithParam<DataType> {};

TEST_P(CommPointToPoint, SendRecvRingAndOrderedSends) {
  const DataType type = GetParam();
  for (int n : {2, 3, 4}) {
    ExpectAllOk(RunRanks(
        n, [type](Communicator& c) { return ForType(type, [&]<Element T>(T) { return PointToPoint<T>(c); }); }));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CommPointToPoint, ::testing::Values(DataType::kF32, DataType::kBF16),
                         [](const auto& info) { return std::string(DataTypeName(info.param)); });

TEST(CommSplit, EvenAndOddRanksFormTwoGroupsOrderedByKey) {
  ExpectAllOk(RunRanks(4, [](Communicator& world) -> std::string {
    const int me = world.rank();
    // Key -rank: each group is ranked in reverse, so the group's order is (3, 1) and (2, 0).
    auto group = world.Split(me % 2, -me);
    if (!group) return Text(group.takeError());
    Communicator& g = **group;
    std::vector<int> members = me % 2 ? std::vector<int>{3, 1} : std::vector<int>{2, 0};
    if (g.size() != 2 || members[g.rank()] != me) return fmt::format("rank {} of {} in its group", g.rank(), g.size());
    if (auto s = CheckAllReduce<float>(g, members, 1001, ReduceOp::kSum); !s.empty()) return s;
    if (auto s = CheckAllReduce<float>(g, members, 7, ReduceOp::kAvg); !s.empty()) return s;
    std::vector<float> x{static_cast<float>(me)};
    if (auto e = g.Broadcast(x.data(), 1, 1)) return Text(std::move(e));
    if (x[0] != static_cast<float>(members[1])) return fmt::format("broadcast in the group gave {}", x[0]);
    // The parent still works, and a second split gets its own mesh.
    if (auto s = CheckAllReduce<float>(world, Iota(4), 7, ReduceOp::kSum); !s.empty()) return s;
    auto all = world.Split(0, me);
    if (!all) return Text(all.takeError());
    return CheckAllReduce<float>(**all, Iota(4), 7, ReduceOp::kSum);
  }));
}

TEST(CommSplit, NoColorGetsNoCommunicator) {
  ExpectAllOk(RunRanks(3, [](Communicator& world) -> std::string {
    const int me = world.rank();
    auto group = world.Split(me == 1 ? kNoColor : 0, me);
    if (!group) return Text(group.takeError());
    if (me == 1) return *group ? "colour -1 got a communicator" : "";
    if (!*group || (*group)->size() != 2) return "ranks 0 and 2 did not get a group of two";
    return CheckAllReduce<float>(**group, std::vector<int>{0, 2}, 7, ReduceOp::kSum);
  }));
}

TEST(CommSplit, AChildReducesBf16InItsOwnRankOrder) {
  ExpectAllOk(RunRanks(4, [](Communicator& world) -> std::string {
    const int me = world.rank();
    // Ranks 1, 2, 3 ranked (3, 2, 1) by key -rank; rank 0 takes no part.
    auto group = world.Split(me == 0 ? kNoColor : 1, -me);
    if (!group) return Text(group.takeError());
    if (me == 0 && *group) return "colour -1 got a communicator";
    if (me == 0) return CheckAllReduce<Bf16>(world, Iota(4), 7, ReduceOp::kSum);
    Communicator& g = **group;
    std::vector<int> members{3, 2, 1};
    if (g.size() != 3 || members[g.rank()] != me) return fmt::format("rank {} of {} in its group", g.rank(), g.size());
    if (auto s = CheckAllReduce<Bf16>(g, members, 1001, ReduceOp::kSum); !s.empty()) return s;
    if (auto s = CheckAllReduce<Bf16>(g, members, 7, ReduceOp::kAvg); !s.empty()) return s;
    if (auto s = CheckScatterGather<Bf16>(g, members, 5); !s.empty()) return s;
    std::vector<Bf16> x{Input<Bf16>(me, 1), Input<Bf16>(me, 2), Input<Bf16>(me, 3)};
    if (auto e = g.Broadcast(x.data(), x.size(), 2)) return Text(std::move(e));
    if (auto s = Compare<Bf16>(
            x, [&](size_t i) { return Input<Bf16>(1, i + 1); }, "Broadcast in the group");
        !s.empty())
      return s;
    return CheckAllReduce<Bf16>(world, Iota(4), 7, ReduceOp::kSum);
  }));
}

// fp32 and bf16 calls of every kind, one after the other on one communicator.
auto Interleaved(Communicator& c) -> std::string {
  const int n = c.size(), me = c.rank();
  std::vector<int> members = Iota(n);
  if (auto s = CheckAllReduce<float>(c, members, 1001, ReduceOp::kSum); !s.empty()) return s;
  if (auto s = CheckAllReduce<Bf16>(c, members, 1001, ReduceOp::kAvg); !s.empty()) return s;
  if (auto s = CheckScatterGather<Bf16>(c, members, 3); !s.empty()) return s;
  if (auto s = CheckAllReduce<float>(c, members, 7, ReduceOp::kAvg); !s.empty()) return s;
  if (auto e = c.Barrier()) return Text(std::move(e));
  if (auto s = CheckScatterGather<float>(c, members, 3); !s.empty()) return s;
  std::vector<Bf16> h(5);
  std::vector<float> f(5);
  for (size_t i = 0; i < 5; ++i) h[i] = Input<Bf16>(me, i), f[i] = Input<float>(me, i);
  if (auto e = c.Broadcast(h.data(), h.size(), 0)) return Text(std::move(e));
  if (auto e = c.Broadcast(f.data(), f.size(), n - 1)) return Text(std::move(e));
  if (auto s = Compare<Bf16>(
          h, [&](size_t i) { return Input<Bf16>(0, i); }, "Broadcast");
      !s.empty())
    return s;
  if (auto s = Compare<float>(
          f, [&](size_t i) { return Input<float>(n - 1, i); }, "Broadcast");
      !s.empty())
    return s;
  if (n > 1) {
    if (auto s = PointToPoint<Bf16>(c); !s.empty()) return s;
    if (auto s = PointToPoint<float>(c); !s.empty()) return s;
  }
  return CheckAllReduce<Bf16>(c, members, 3, ReduceOp::kSum);
}

TEST(CommMixed, Fp32AndBf16CallsInterleaveOnOneCommunicator) {
  for (int n : {1, 3}) ExpectAllOk(RunRanks(n, Interleaved));
}

// What a surviving rank reports: the error of `call`, how long it took, and
// whether the next call failed at once.
auto ExpectFailure(Communicator& c, const std::function<llvm::Error()>& call) -> std::string {
  auto start = Clock::now();
  llvm::Error e = call();
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  if (!e) return "no error";
  std::string message = Text(std::move(e));
  auto again = Clock::now();
  std::string next = Text(c.Barrier());
  if (next.find("failed earlier") == std::string::npos || Clock::now() - again > 100ms) {
    return "the next call did not fail at once: " + next;
  }
  return fmt::format("{} ms: {}", took.count(), message);
}

auto Millis(const std::string& report) -> long { return std::atol(report.c_str()); }

TEST(CommFailures, AKilledRankIsNamedByEveryOtherRank) {
  RunSetup setup{.timeout = 2s, .tweak = {}, .kill_rank = 3, .kill_after = 300ms};
  auto reports = RunRanks(
      4,
      [](Communicator& c) -> std::string {
        if (c.rank() == 3) ::pause();  // killed by the parent while the others wait for it
        std::vector<float> data(1000003, 1.0f);
        return ExpectFailure(c, [&] { return c.AllReduce(data.data(), data.size(), ReduceOp::kSum); });
      },
      setup);
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_EQ(reports[3], "killed");
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(reports[r].find("rank 3 closed its connection during AllReduce"), std::string::npos) << reports[r];
    EXPECT_LT(Millis(reports[r]), 5000) << reports[r];
  }
}

TEST(CommFailures, ASilentRankTimesOutNamed) {
  auto reports = RunRanks(
      3,
      [](Communicator& c) -> std::string {
        if (c.rank() == 2) {
          std::this_thread::sleep_for(2500ms);
          return "";
        }
        return ExpectFailure(c, [&] { return c.Barrier(); });
      },
      RunSetup{.timeout = 1s, .tweak = {}});
  ASSERT_EQ(reports.size(), 3u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(reports[r].find("rank 2 sent nothing for 1 s during Barrier"), std::string::npos) << reports[r];
    EXPECT_LT(Millis(reports[r]), 2000) << reports[r];
  }
}

TEST(CommFailures, MismatchedSizesAreAnError) {
  auto reports = RunRanks(2, [](Communicator& c) -> std::string {
    std::vector<float> data(8, 1.0f);
    return ExpectFailure(c, [&] { return c.AllReduce(data.data(), 7 + c.rank(), ReduceOp::kSum); });
  });
  ASSERT_EQ(reports.size(), 2u);
  for (const auto& r : reports) EXPECT_NE(r.find("passed different sizes"), std::string::npos) << r;
}

TEST(CommFailures, MismatchedDataTypesAreAnError) {
  // 4 fp32 and 8 bf16 elements are the same bytes: only the header's type differs.
  auto reports = RunRanks(2, [](Communicator& c) -> std::string {
    std::vector<float> f(4, 1.0f);
    std::vector<Bf16> h(8, ToBf16(1.0f));
    return ExpectFailure(c, [&] {
      return c.rank() == 0 ? c.AllReduce(f.data(), f.size(), ReduceOp::kSum)
                           : c.AllReduce(h.data(), h.size(), ReduceOp::kSum);
    });
  });
  ASSERT_EQ(reports.size(), 2u);
  for (const auto& r : reports) {
    EXPECT_NE(r.find("passed different sizes or data types"), std::string::npos) << r;
    EXPECT_NE(r.find("8-byte bf16 AllReduce message"), std::string::npos) << r;
    EXPECT_NE(r.find("8-byte fp32 AllReduce message"), std::string::npos) << r;
  }
}

TEST(CommFailures, AnUnknownDataTypeIsRefusedAndTheCommunicatorStillWorks) {
  ExpectAllOk(RunRanks(2, [](Communicator& c) -> std::string {
    std::vector<float> data(4, 1.0f);
    std::string refused = Text(c.AllReduce(data.data(), data.size(), static_cast<DataType>(7), ReduceOp::kSum));
    if (refused.find("data type 7 is neither fp32 (0) nor bf16 (1)") == std::string::npos) return "got: " + refused;
    return CheckAllReduce<Bf16>(c, Iota(2), 7, ReduceOp::kSum);
  }));
}

TEST(CommFailures, AWrongTokenIsRefused) {
  RunSetup setup{.timeout = 1s, .tweak = [](TcpOptions& o) {
                   if (o.rank == 1) o.token = "not-the-job-token-0123456789";
                 }};
  auto reports = RunRanks(
      2, [](Communicator&) -> std::string { return "created"; }, setup);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_NE(reports[1].find("rank 0 refused the connection of rank 1 of communicator 'world': the job token does "
                            "not match"),
            std::string::npos)
      << reports[1];
  EXPECT_NE(reports[0].find("rank 1 did not connect to rank 0 of communicator 'world' within 2 s (refused a "
                            "connection from 127.0.0.1:"),
            std::string::npos)
      << reports[0];
}

// A stranger at rank 0's port: `bytes`, then whatever rank 0 answers before
// closing ("" when it closes without a word).
auto KnockOnRankZero(rendezvous::StoreClient& store, std::string_view bytes) -> std::string {
  auto addr = store.Get(AddressKey("world", 0), 2s);
  if (!addr) return Text(addr.takeError());
  auto colon = addr->rfind(':');
  auto fd = net::ConnectWithRetry(addr->substr(0, colon), static_cast<uint16_t>(std::stoi(addr->substr(colon + 1))),
                                  Clock::now() + 2s);
  if (!fd) return Text(fd.takeError());
  net::SendAll(fd->get(), bytes, Clock::now() + 1s);
  std::string reply;
  char buf[256];
  for (;;) {
    auto io = net::RecvExact(fd->get(), buf, sizeof buf, Clock::now() + 2s);
    reply.append(buf, io.done);
    if (io.kind != net::IoResult::kOk) break;
  }
  return reply;
}

TEST(CommFailures, StrangersAreRefusedAndTheMeshStillForms) {
  RunSetup setup{.timeout = 2s, .tweak = [](TcpOptions& o) {
                   if (o.rank != 2) return;
                   std::string garbage = KnockOnRankZero(*o.store, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
                   std::string wrong =
                       KnockOnRankZero(*o.store, detail::EncodeHello("wrong-token-0123456789", "world", 2, 0, 3));
                   std::string other = KnockOnRankZero(*o.store, detail::EncodeHello(kToken, "other", 2, 0, 3));
                   // A refusal is a frame: u32 length, u8 CommErrc, str sentence.
                   bool refused = garbage.empty() && wrong.find("the job token does not match") != std::string::npos &&
                                  other.find("not rank 0 of 'other'") != std::string::npos && wrong.size() > 4 &&
                                  wrong[4] == static_cast<char>(CommErrc::kBadToken) && other.size() > 4 &&
                                  other[4] == static_cast<char>(CommErrc::kInvalidArgument);
                   if (!refused) o.size = 0;  // fails Create, so the test sees it
                 }};
  ExpectAllOk(RunRanks(
      3, [](Communicator& c) { return CheckAllReduce<float>(c, Iota(3), 7, ReduceOp::kSum); }, setup));
}

}  // namespace
}  // namespace avf::comm
