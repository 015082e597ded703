// The NCCL communicator. Every rank, and every CUDA call, runs in a forked
// child: a parent that had initialized CUDA could not fork ranks that use it,
// so the parent asks a child how many devices there are (DeviceProbe) and
// starts the rendezvous store after the forks, as comm_test.cpp does.
//
// Without a GPU (a machine without a driver, CI) the no-device tests run:
// Create fails at once with a sentence, on every rank, and no rank hangs or
// crashes. The GPU tests skip with a message there. NCCL refuses two ranks on
// one GPU, so a one-GPU machine runs 1-rank communicators (and the timeouts
// of a world whose other rank never comes); the multi-rank tests need one
// device per rank.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <functional>

#include "comm/nccl_communicator.h"
#include "forked_ranks.h"
#include "rendezvous/socket.h"
#include "rendezvous/store.h"

namespace avf::comm {
namespace {

using namespace std::chrono_literals;
using rendezvous::net::Clock;
namespace net = rendezvous::net;

using testing::kPlanSha256;
using testing::kToken;
using testing::Text;

// "" when `e` is a failure with `code` whose message contains every `parts`.
auto ExpectFailure(llvm::Error e, CommErrc code, std::initializer_list<std::string_view> parts) -> std::string {
  if (!e) return "succeeded, expected a failure";
  auto f = TakeFailure(std::move(e));
  std::fprintf(stderr, "[expected failure, %s] %s\n", std::string(ErrcName(f.code)).c_str(), f.message.c_str());
  if (f.code != code) return fmt::format("code {} instead of {}: {}", ErrcName(f.code), ErrcName(code), f.message);
  for (auto part : parts) {
    if (f.message.find(part) == std::string::npos) return fmt::format("'{}' lacks '{}'", f.message, part);
  }
  return "";
}

// ---- forked children (forked_ranks.h) --------------------------------------

using testing::Child;
using testing::Give;
using testing::Reap;
using testing::Spawn;

// How many CUDA devices a child sees; -1 and CUDA's words when none can be used.
struct Probe {
  int devices = -1;
  std::string why;
};

auto DeviceProbe() -> const Probe& {
  static const Probe probe = [] {
    Child c = Spawn([](uint16_t) -> std::string {
      auto n = VisibleCudaDevices();
      return n ? fmt::format("devices {}", *n) : Text(n.takeError());
    });
    Give(c, 0);
    Probe p;
    std::string r = Reap(c, Clock::now() + 30s);
    if (r.rfind("devices ", 0) == 0) {
      p.devices = std::stoi(r.substr(8));
      p.why = fmt::format("{} visible", p.devices);
    } else {
      p.devices = 0;
      p.why = r;
    }
    return p;
  }();
  return probe;
}

#define REQUIRE_GPUS(n)                                                                                             \
  do {                                                                                                              \
    if (DeviceProbe().devices < (n)) {                                                                              \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s), one per NCCL rank; this machine: " << DeviceProbe().why; \
    }                                                                                                               \
  } while (0)

// One rank's setting: its store client and the world it belongs to.
struct Rank {
  int rank = 0, size = 1;
  std::shared_ptr<rendezvous::StoreClient> store;

  auto Options(milliseconds timeout = 10s, milliseconds setup = 20s) const -> NcclOptions {
    return {.store = store, .rank = rank, .size = size, .device = rank, .timeout = timeout, .setup_timeout = setup};
  }
};
using Body = std::function<std::string(const Rank&)>;

struct World {
  int size = 1;
  std::vector<int> present{};  // the ranks that run (default: all)
  milliseconds limit = 60s;    // when the parent kills what is left
  // Called with the store's port after every rank finished (the store is
  // still up), to read what the ranks left there.
  std::function<void(uint16_t)> inspect{};
};

auto RunRanks(const World& w, const Body& body) -> std::vector<std::string> {
  std::vector<int> ranks = w.present;
  if (ranks.empty()) {
    for (int r = 0; r < w.size; ++r) ranks.push_back(r);
  }
  std::vector<Child> children;
  for (int r : ranks) {
    children.push_back(Spawn([&, r](uint16_t port) -> std::string {
      auto store = rendezvous::StoreClient::Join({.port = port,
                                                  .rank = r,
                                                  .world_size = w.size,
                                                  .token = kToken,
                                                  .plan_sha256 = kPlanSha256,
                                                  .connect_timeout = 5s,
                                                  .io_timeout = 5s});
      if (!store) return "join: " + Text(store.takeError());
      return body(Rank{r, w.size, std::shared_ptr<rendezvous::StoreClient>(std::move(*store))});
    }));
  }
  rendezvous::ServerOptions so;
  so.host = "127.0.0.1";
  so.world_size = w.size;
  so.token = kToken;
  so.plan_sha256 = kPlanSha256;
  auto server = rendezvous::StoreServer::Start(std::move(so));
  if (!server) return {"server: " + Text(server.takeError())};
  for (auto& c : children) Give(c, (*server)->port());
  const auto deadline = Clock::now() + w.limit;
  std::vector<std::string> reports;
  for (auto& c : children) reports.push_back(Reap(c, deadline));
  if (w.inspect) w.inspect((*server)->port());
  return reports;
}

using testing::ExpectAllOk;

auto Seconds(Clock::duration d) -> double { return std::chrono::duration<double>(d).count(); }

// ---- device buffers ---------------------------------------------------------

template <class T>
class DeviceVector {
 public:
  explicit DeviceVector(size_t n) : n_(n) {
    if (cudaMalloc(reinterpret_cast<void**>(&p_), std::max<size_t>(n, 1) * sizeof(T)) != cudaSuccess) p_ = nullptr;
  }
  explicit DeviceVector(const std::vector<T>& host) : DeviceVector(host.size()) {
    if (p_ && cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess) Drop();
  }
  ~DeviceVector() { Drop(); }
  DeviceVector(const DeviceVector&) = delete;
  auto operator=(const DeviceVector&) -> DeviceVector& = delete;

  auto ok() const -> bool { return p_ != nullptr; }
  auto get() const -> T* { return p_; }
  auto Host() const -> std::vector<T> {
    std::vector<T> h(n_);
    if (p_ && cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) h.clear();
    return h;
  }

 private:
  void Drop() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
};

auto Bits(float x) -> uint32_t { return std::bit_cast<uint32_t>(x); }
auto Bits(Bf16 x) -> uint32_t { return x.bits; }
auto Show(float x) -> float { return x; }
auto Show(Bf16 x) -> float { return ToFloat(x); }

// "" when got equals want bit for bit, else the first difference.
template <class T>
auto Compare(const std::vector<T>& got, const std::vector<T>& want, std::string_view what) -> std::string {
  if (got.size() != want.size()) return fmt::format("{}: {} elements, expected {}", what, got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (Bits(got[i]) != Bits(want[i])) {
      return fmt::format("{}: element {} is {}, expected {}", what, i, Show(got[i]), Show(want[i]));
    }
  }
  return "";
}

// Rank r's element i: small integers, so every sum is exact in any order
// (NCCL's order is not the CPU backend's), in fp32 and in bf16 (< 256).
auto Small(int r, size_t i) -> float { return static_cast<float>((i * 7 + static_cast<size_t>(r) * 3) % 13); }

template <class T>
auto Inputs(int r, size_t n) -> std::vector<T> {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::same_as<T, float>) {
      v[i] = Small(r, i);
    } else {
      v[i] = ToBf16(Small(r, i));
    }
  }
  return v;
}

template <class T>
auto FromFloat(float x) -> T {
  if constexpr (std::same_as<T, float>) {
    return x;
  } else {
    return ToBf16(x);
  }
}

// The sum over ranks 0..n-1 of Inputs (/ n for Avg; n a power of two keeps it exact).
template <class T>
auto Reduced(int n, size_t count, ReduceOp op, size_t offset = 0) -> std::vector<T> {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) {
    float acc = 0;
    for (int r = 0; r < n; ++r) acc += Small(r, offset + i);
    v[i] = FromFloat<T>(op == ReduceOp::kAvg ? acc / static_cast<float>(n) : acc);
  }
  return v;
}

// AllReduce (sum and avg), ReduceScatter (out of place and in place) and
// AllGather (out of place and in place) on `comm`, checked against Reduced.
template <Element T>
auto CheckCollectives(Communicator& comm, size_t count) -> std::string {
  const int n = comm.size(), me = comm.rank();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
    DeviceVector<T> data(Inputs<T>(me, count));
    if (!data.ok()) return "cudaMalloc failed";
    if (auto e = comm.AllReduce(data.get(), count, op)) return "AllReduce: " + Text(std::move(e));
    auto what = fmt::format("AllReduce {} of {}", ReduceOpName(op), count);
    if (auto d = Compare(data.Host(), Reduced<T>(n, count, op), what); !d.empty()) return d;
  }
  // ReduceScatter: block r of the sum goes to rank r.
  DeviceVector<T> in(Inputs<T>(me, count * n));
  DeviceVector<T> out(count);
  if (auto e = comm.ReduceScatter(in.get(), out.get(), count, ReduceOp::kSum))
    return "ReduceScatter: " + Text(std::move(e));
  auto want = Reduced<T>(n, count, ReduceOp::kSum, count * me);
  if (auto d = Compare(out.Host(), want, "ReduceScatter"); !d.empty()) return d;
  if (auto e = comm.ReduceScatter(in.get(), in.get() + count * me, count, ReduceOp::kSum)) {
    return "in-place ReduceScatter: " + Text(std::move(e));
  }
  auto all = in.Host();
  std::vector<T> mine(all.begin() + count * me, all.begin() + count * (me + 1));
  if (auto d = Compare(mine, want, "in-place ReduceScatter"); !d.empty()) return d;
  // AllGather: block r is rank r's input.
  std::vector<T> gathered_want;
  for (int r = 0; r < n; ++r) {
    auto block = Inputs<T>(r, count);
    gathered_want.insert(gathered_want.end(), block.begin(), block.end());
  }
  DeviceVector<T> block(Inputs<T>(me, count));
  DeviceVector<T> gathered(count * n);
  if (auto e = comm.AllGather(block.get(), gathered.get(), count)) return "AllGather: " + Text(std::move(e));
  if (auto d = Compare(gathered.Host(), gathered_want, "AllGather"); !d.empty()) return d;
  std::vector<T> seeded(count * n, FromFloat<T>(0));  // block `me` holds this rank's input
  auto own = Inputs<T>(me, count);
  std::copy(own.begin(), own.end(), seeded.begin() + count * me);
  DeviceVector<T> seeded_dev(seeded);
  if (auto e = comm.AllGather(seeded_dev.get() + count * me, seeded_dev.get(), count)) {
    return "in-place AllGather: " + Text(std::move(e));
  }
  return Compare(seeded_dev.Host(), gathered_want, "in-place AllGather");
}

// ---- everywhere: no GPU needed ------------------------------------------------

TEST(NcclInfo, VersionMatchesTheHeader) {
  auto v = NcclVersion();
  ASSERT_TRUE(static_cast<bool>(v)) << Text(v.takeError());
  EXPECT_EQ(v->code, NCCL_VERSION_CODE);
  EXPECT_EQ(v->major, NCCL_MAJOR);
  EXPECT_EQ(v->minor, NCCL_MINOR);
  EXPECT_EQ(v->patch, NCCL_PATCH);
  EXPECT_EQ(v->text(), fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
}

TEST(NcclInfo, AvailableMatchesTheDeviceProbe) {
  Child c = Spawn([](uint16_t) -> std::string { return NcclAvailable() ? "available" : "unavailable"; });
  Give(c, 0);
  EXPECT_EQ(Reap(c, Clock::now() + 30s), DeviceProbe().devices > 0 ? "available" : "unavailable") << DeviceProbe().why;
}

TEST(NcclCreate, RefusesBadOptionsBeforeTouchingCuda) {
  // Checked before cudaGetDeviceCount, so this runs in the test process.
  auto no_store = NcclCommunicator::Create({.rank = 0, .size = 1});
  EXPECT_EQ(ExpectFailure(no_store.takeError(), CommErrc::kInvalidArgument,
                          {"NCCL communicator 'world' has no rendezvous store"}),
            "");
  // A client that never connected: these options are refused before it is used.
  rendezvous::ServerOptions so;
  so.host = "127.0.0.1";
  so.token = kToken;
  so.plan_sha256 = kPlanSha256;
  auto server = rendezvous::StoreServer::Start(std::move(so));
  ASSERT_TRUE(static_cast<bool>(server)) << Text(server.takeError());
  auto client = rendezvous::StoreClient::Join(
      {.port = (*server)->port(), .token = kToken, .plan_sha256 = kPlanSha256, .connect_timeout = 5s});
  ASSERT_TRUE(static_cast<bool>(client)) << Text(client.takeError());
  std::shared_ptr<rendezvous::StoreClient> store(std::move(*client));
  for (auto [rank, size, device, why] : {std::tuple{2, 2, 0, "a rank from 0"},
                                         {-1, 2, 0, "a rank from 0"},
                                         {0, 0, 0, "a rank from 0"},
                                         {0, 1, -1, "a CUDA device index >= 0"}}) {
    auto made = NcclCommunicator::Create({.store = store, .rank = rank, .size = size, .device = device});
    EXPECT_EQ(ExpectFailure(made.takeError(), CommErrc::kInvalidArgument,
                            {why, fmt::format("(rank {}, size {}, device {})", rank, size, device)}),
              "");
  }
}

TEST(NcclCreate, FailsCleanlyWithoutADevice) {
  if (DeviceProbe().devices > 0) GTEST_SKIP() << "a CUDA device is visible (" << DeviceProbe().why << ")";
  auto reports = RunRanks({.size = 1, .limit = 20s}, [](const Rank& me) -> std::string {
    const auto start = Clock::now();
    auto made = NcclCommunicator::Create(me.Options());
    if (Seconds(Clock::now() - start) > 5) return fmt::format("took {} s", Seconds(Clock::now() - start));
    return ExpectFailure(made.takeError(), CommErrc::kIo,
                         {"no CUDA device is visible to rank 0 (cudaGetDeviceCount: ", "NCCL needs one GPU per rank"});
  });
  ExpectAllOk(reports);  // no hang ("hung: "), no crash ("signal N")
}

TEST(NcclCreate, EveryRankFailsPromptlyWithoutADevice) {
  if (DeviceProbe().devices > 0) GTEST_SKIP() << "a CUDA device is visible (" << DeviceProbe().why << ")";
  std::string id_value;
  World world{.size = 3, .limit = 30s};
  world.inspect = [&](uint16_t port) {
    auto store = rendezvous::StoreClient::Join({.port = port,
                                                .rank = 0,
                                                .world_size = 3,
                                                .token = kToken,
                                                .plan_sha256 = kPlanSha256,
                                                .connect_timeout = 5s,
                                                .io_timeout = 5s});
    if (!store) return;
    auto value = (*store)->Get(NcclIdKey("world"), 0ms);
    id_value = value ? *value : Text(value.takeError());
  };
  auto reports = RunRanks(world, [](const Rank& me) -> std::string {
    const auto start = Clock::now();
    // A long setup timeout: the ranks must fail on their own, not time out.
    auto made = NcclCommunicator::Create(me.Options(10s, 60s));
    if (Seconds(Clock::now() - start) > 5) return fmt::format("took {} s", Seconds(Clock::now() - start));
    return ExpectFailure(made.takeError(), CommErrc::kIo,
                         {fmt::format("no CUDA device is visible to rank {}", me.rank)});
  });
  ExpectAllOk(reports);
  // Rank 0 left its error where the others wait for the unique id.
  EXPECT_EQ(id_value.substr(0, 1), "E");
  EXPECT_NE(id_value.find("no CUDA device is visible to rank 0"), std::string::npos) << id_value;
}

// ---- one GPU: 1-rank communicators, and worlds whose other rank is absent -----

TEST(NcclOneRank, Collectives) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunRanks({.size = 1}, [](const Rank& me) -> std::string {
    auto world = NcclCommunicator::Create(me.Options());
    if (!world) return "create: " + Text(world.takeError());
    for (size_t count : {size_t{1}, size_t{3}, size_t{1'000'003}}) {
      if (auto d = CheckCollectives<float>(**world, count); !d.empty()) return "fp32: " + d;
      if (auto d = CheckCollectives<Bf16>(**world, count); !d.empty()) return "bf16: " + d;
    }
    DeviceVector<float> x(Inputs<float>(0, 5));
    if (auto e = (*world)->Broadcast(x.get(), 5, /*root=*/0)) return "broadcast: " + Text(std::move(e));
    if (auto d = Compare(x.Host(), Inputs<float>(0, 5), "Broadcast"); !d.empty()) return d;
    if (auto e = (*world)->AllReduce(x.get(), 0, ReduceOp::kSum)) return "empty AllReduce: " + Text(std::move(e));
    for (int i = 0; i < 3; ++i) {
      if (auto e = (*world)->Barrier()) return "barrier: " + Text(std::move(e));
    }
    return "";
  }));
}

TEST(NcclOneRank, Split) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunRanks({.size = 1}, [](const Rank& me) -> std::string {
    auto world = NcclCommunicator::Create(me.Options());
    if (!world) return "create: " + Text(world.takeError());
    auto none = (*world)->Split(kNoColor, 0);
    if (!none) return "no-colour split: " + Text(none.takeError());
    if (*none) return "the no-colour split gave a communicator";
    auto child = (*world)->Split(/*color=*/5, /*key=*/0);
    if (!child) return "split: " + Text(child.takeError());
    if (!*child || (*child)->rank() != 0 || (*child)->size() != 1) return "the split gave no 1-rank communicator";
    auto* nccl = dynamic_cast<NcclCommunicator*>(child->get());
    if (!nccl || nccl->id() != "world.s1.c5") return "child id " + (nccl ? nccl->id() : std::string("?"));
    if (auto d = CheckCollectives<float>(**child, 17); !d.empty()) return "child: " + d;
    if (auto e = (*child)->Barrier()) return "child barrier: " + Text(std::move(e));
    auto bad = (*world)->Split(-2, 0);
    if (auto d = ExpectFailure(bad.takeError(), CommErrc::kInvalidArgument, {"colour -2"}); !d.empty()) return d;
    return CheckCollectives<Bf16>(**world, 9);  // the parent still works
  }));
}

TEST(NcclOneRank, RefusesHostPointersAndBadArguments) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunRanks({.size = 1}, [](const Rank& me) -> std::string {
    auto world = NcclCommunicator::Create(me.Options());
    if (!world) return "create: " + Text(world.takeError());
    Communicator& c = **world;
    std::vector<float> host(8, 1.0f);
    if (auto d = ExpectFailure(c.AllReduce(host.data(), host.size(), ReduceOp::kSum), CommErrc::kInvalidArgument,
                               {"host memory", "device pointers"});
        !d.empty()) {
      return d;
    }
    DeviceVector<float> dev(8);
    if (auto d = ExpectFailure(c.Send(dev.get(), 8, 0), CommErrc::kInvalidArgument, {"another rank"}); !d.empty()) {
      return d;
    }
    if (auto d = ExpectFailure(c.Broadcast(dev.get(), 8, 1), CommErrc::kInvalidArgument, {"root"}); !d.empty()) {
      return d;
    }
    if (auto d = ExpectFailure(c.AllReduce(dev.get(), 8, static_cast<DataType>(7), ReduceOp::kSum),
                               CommErrc::kInvalidArgument, {"data type 7"});
        !d.empty()) {
      return d;
    }
    return CheckCollectives<float>(c, 8);  // refused calls do not break it
  }));
}

TEST(NcclOneRank, DeviceOutOfRange) {
  REQUIRE_GPUS(1);
  const int devices = DeviceProbe().devices;
  ExpectAllOk(RunRanks({.size = 1}, [devices](const Rank& me) -> std::string {
    NcclOptions o = me.Options();
    o.device = devices;
    auto made = NcclCommunicator::Create(o);
    return ExpectFailure(made.takeError(), CommErrc::kIo, {fmt::format("was given CUDA device {}", devices)});
  }));
}

TEST(NcclOneRank, InitTimesOutWhenARankNeverComes) {
  REQUIRE_GPUS(1);
  // A 2-rank world where only rank 0 runs: it has the id, NCCL's init waits
  // for rank 1 and must be abandoned at the setup timeout.
  auto reports = RunRanks({.size = 2, .present = {0}, .limit = 40s}, [](const Rank& me) -> std::string {
    const auto start = Clock::now();
    auto made = NcclCommunicator::Create(me.Options(2s, 3s));
    const double took = Seconds(Clock::now() - start);
    if (took < 2.5 || took > 15) return fmt::format("failed after {} s, not about 3 s", took);
    return ExpectFailure(made.takeError(), CommErrc::kTimeout, {"NCCL init", "did not finish within 3 s", "aborted"});
  });
  ExpectAllOk(reports);
}

TEST(NcclOneRank, WaitsForRankZerosIdWithATimeout) {
  REQUIRE_GPUS(1);
  auto reports = RunRanks({.size = 2, .present = {1}, .limit = 30s}, [](const Rank& me) -> std::string {
    NcclOptions o = me.Options(2s, 2s);
    o.device = 0;
    auto made = NcclCommunicator::Create(o);
    return ExpectFailure(made.takeError(), CommErrc::kTimeout, {"waited for rank 0's NCCL unique id"});
  });
  ExpectAllOk(reports);
}

TEST(NcclOneRank, RankZerosFailureReachesTheOthersAtOnce) {
  REQUIRE_GPUS(1);
  const int devices = DeviceProbe().devices;
  auto reports = RunRanks({.size = 2, .limit = 30s}, [devices](const Rank& me) -> std::string {
    NcclOptions o = me.Options(10s, 60s);
    o.device = me.rank == 0 ? devices : 0;  // rank 0 cannot start
    const auto start = Clock::now();
    auto made = NcclCommunicator::Create(o);
    if (Seconds(Clock::now() - start) > 10) return fmt::format("took {} s", Seconds(Clock::now() - start));
    if (me.rank == 0) return ExpectFailure(made.takeError(), CommErrc::kIo, {"was given CUDA device"});
    return ExpectFailure(made.takeError(), CommErrc::kConnectionLost,
                         {"rank 0 could not create it", "was given CUDA device"});
  });
  ExpectAllOk(reports);
}

// ---- one GPU per rank ---------------------------------------------------------

// 4 ranks where 4 devices exist, else 2: Avg divides by a power of two, exactly.
auto MultiSize() -> int { return DeviceProbe().devices >= 4 ? 4 : 2; }

TEST(NcclMultiRank, Collectives) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunRanks({.size = MultiSize()}, [](const Rank& me) -> std::string {
    auto world = NcclCommunicator::Create(me.Options());
    if (!world) return "create: " + Text(world.takeError());
    Communicator& c = **world;
    for (size_t count : {size_t{1}, size_t{7}, size_t{1'000'003}}) {
      if (auto d = CheckCollectives<float>(c, count); !d.empty()) return "fp32: " + d;
      if (auto d = CheckCollectives<Bf16>(c, count); !d.empty()) return "bf16: " + d;
    }
    const int n = c.size(), last = n - 1;
    DeviceVector<float> b(Inputs<float>(me.rank, 1000));
    if (auto e = c.Broadcast(b.get(), 1000, last)) return "broadcast: " + Text(std::move(e));
    if (auto d = Compare(b.Host(), Inputs<float>(last, 1000), "Broadcast"); !d.empty()) return d;
    // A ring: send to the next rank, receive from the previous one (4 MiB).
    const size_t ring = 1 << 20;
    DeviceVector<float> out(Inputs<float>(me.rank, ring)), in(ring);
    if (auto e = c.SendRecv(out.get(), ring, (me.rank + 1) % n, in.get(), ring, (me.rank + n - 1) % n)) {
      return "ring: " + Text(std::move(e));
    }
    if (auto d = Compare(in.Host(), Inputs<float>((me.rank + n - 1) % n, ring), "SendRecv"); !d.empty()) return d;
    // Send/Recv pairs: even ranks send first, odd ranks receive first.
    const int peer = me.rank ^ 1;
    DeviceVector<float> p2p(Inputs<float>(me.rank, 64));
    auto e = me.rank % 2 == 0 ? c.Send(p2p.get(), 64, peer) : c.Recv(p2p.get(), 64, peer);
    if (e) return "send/recv: " + Text(std::move(e));
    if (auto d = Compare(p2p.Host(), Inputs<float>(me.rank % 2 == 0 ? me.rank : peer, 64), "Send/Recv"); !d.empty()) {
      return d;
    }
    return Text(c.Barrier());
  }));
}

TEST(NcclMultiRank, SplitEvenOdd) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunRanks({.size = MultiSize()}, [](const Rank& me) -> std::string {
    auto world = NcclCommunicator::Create(me.Options());
    if (!world) return "create: " + Text(world.takeError());
    // Reversed keys: the child ranks run backwards.
    auto half = (*world)->Split(me.rank % 2, -me.rank);
    if (!half) return "split: " + Text(half.takeError());
    const int members = ((*world)->size() - me.rank % 2 + 1) / 2;
    const int want_rank = members - 1 - me.rank / 2;
    if ((*half)->size() != members || (*half)->rank() != want_rank) {
      return fmt::format("child rank {} of {}, expected {} of {}", (*half)->rank(), (*half)->size(), want_rank,
                         members);
    }
    DeviceVector<float> x(std::vector<float>{static_cast<float>(me.rank)});
    if (auto e = (*half)->AllReduce(x.get(), 1, ReduceOp::kSum)) return "child allreduce: " + Text(std::move(e));
    float want = 0;
    for (int r = me.rank % 2; r < (*world)->size(); r += 2) want += static_cast<float>(r);
    if (auto d = Compare(x.Host(), std::vector<float>{want}, "child AllReduce"); !d.empty()) return d;
    // Rank 0 stays out of the next split.
    auto rest = (*world)->Split(me.rank == 0 ? kNoColor : 0, me.rank);
    if (!rest) return "second split: " + Text(rest.takeError());
    if (me.rank == 0) return *rest ? "rank 0 got a communicator with kNoColor" : "";
    if (!*rest || (*rest)->size() != (*world)->size() - 1 || (*rest)->rank() != me.rank - 1) return "second split";
    return Text((*rest)->Barrier());
  }));
}

TEST(NcclMultiRank, ExitedPeerFailsTheOthersWithinTheTimeout) {
  REQUIRE_GPUS(2);
  const int n = MultiSize();
  auto reports = RunRanks({.size = n, .limit = 60s}, [n](const Rank& me) -> std::string {
    auto world = NcclCommunicator::Create(me.Options(/*timeout=*/3s));
    if (!world) return "create: " + Text(world.takeError());
    if (auto e = (*world)->Barrier()) return "first barrier: " + Text(std::move(e));
    if (me.rank == n - 1) ::_exit(3);  // gone without a word
    DeviceVector<float> x(Inputs<float>(me.rank, 1 << 20));
    const auto start = Clock::now();
    llvm::Error e = (*world)->AllReduce(x.get(), 1 << 20, ReduceOp::kSum);
    const double took = Seconds(Clock::now() - start);
    if (!e) return "the AllReduce without its last rank succeeded";
    auto first = TakeFailure(std::move(e));
    std::fprintf(stderr, "[rank %d after %.2f s] %s\n", me.rank, took, first.message.c_str());
    if (took > 3 + 10) return fmt::format("failed only after {} s", took);
    // Every later call fails at once with the first error.
    return ExpectFailure((*world)->Barrier(), first.code, {"failed earlier"});
  });
  for (int r = 0; r < n - 1; ++r) EXPECT_EQ(reports[r], "") << "rank " << r;
  EXPECT_EQ(reports[n - 1], "exit 3");
}

}  // namespace
}  // namespace avf::comm
