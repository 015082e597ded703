// The store across real processes: ranks are forked children (separate
// address spaces, their own client) talking to rank 0 over 127.0.0.1, as on a
// cluster. Children are forked before the server thread starts, so no lock
// is held across fork(); each child reports through a socket pair and _exit()s.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rendezvous_test_util.h"

namespace avf::rendezvous::testing {
namespace {

struct Child {
  pid_t pid = -1;
  int port_pipe = -1;    // parent -> child: the store's port
  int result_pipe = -1;  // child -> parent: "" on success, else the failure
};

// What a child rank runs; returns "" on success.
using RankBody = std::function<std::string(StoreClient&)>;

auto RunChild(int rank, int world, int port_fd, int result_fd, const RankBody& body) -> std::string {
  uint16_t port = 0;
  if (net::RecvExact(port_fd, reinterpret_cast<char*>(&port), sizeof port, Clock::now() + 5s).done != sizeof port) {
    return "no port from the parent";
  }
  ClientOptions o;
  o.port = port;
  o.rank = rank;
  o.world_size = world;
  o.token = kToken;
  o.plan_sha256 = kPlanSha256;
  o.connect_timeout = 3s;
  o.io_timeout = 3s;
  auto c = StoreClient::Join(o);
  if (!c) return ErrText(c.takeError());
  return body(**c);
}

auto Fork(int rank, int world, const RankBody& body) -> Child {
  // Socket pairs, not pipes: net:: reads and writes with recv/send (MSG_NOSIGNAL).
  int to_child[2], from_child[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to_child) != 0 ||
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, from_child) != 0) {
    return {};
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    std::string result = RunChild(rank, world, to_child[0], from_child[1], body);
    net::SendAll(from_child[1], result.empty() ? "ok" : result, Clock::now() + 1s);
    ::_exit(result.empty() ? 0 : 1);  // no atexit handlers, no gtest teardown in the child
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  return {pid, to_child[1], from_child[0]};
}

void SendPort(Child& c, uint16_t port) {
  std::string_view bytes(reinterpret_cast<const char*>(&port), sizeof port);
  if (net::SendAll(c.port_pipe, bytes, Clock::now() + 1s).kind != net::IoResult::kOk)
    ADD_FAILURE() << "cannot send the port";
  ::close(c.port_pipe);
}

// Collects the child's report and exit status (killing it after 5 s).
auto Collect(Child& c) -> std::string {
  std::string report;
  char buf[512];
  auto deadline = Clock::now() + 5s;
  for (;;) {
    auto io = net::RecvExact(c.result_pipe, buf, sizeof buf, deadline);
    report.append(buf, io.done);
    if (io.kind != net::IoResult::kOk) break;
  }
  ::close(c.result_pipe);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(c.pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  if (done == 0) {
    ::kill(c.pid, SIGKILL);
    ::waitpid(c.pid, &status, 0);
    return "child hung: " + report;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child failed: " + report;
  return report == "ok" ? "" : report;
}

TEST(RendezvousProcesses, FourRanksExchangeAddressesAnIdAndBarriers) {
  constexpr int kWorld = 4;
  RankBody body = [](StoreClient& c) -> std::string {
    int r = c.rank();
    if (auto e = c.Set(fmt::format("addr/{}", r), fmt::format("pid-{}", ::getpid()))) return ErrText(std::move(e));
    auto n = c.Add("arrivals", 1);
    if (!n) return ErrText(n.takeError());
    if (auto e = c.Barrier("start", kWorld, 3s)) return ErrText(std::move(e));
    for (int peer = 0; peer < kWorld; ++peer) {
      auto v = c.Get(fmt::format("addr/{}", peer), 3s);
      if (!v) return ErrText(v.takeError());
      if (!v->starts_with("pid-")) return "bad address " + *v;
    }
    auto id = c.Get("nccl/unique_id", 3s);  // rank 0 sets it after the barrier
    if (!id) return ErrText(id.takeError());
    if (auto e = c.Set(fmt::format("echo/{}", r), *id)) return ErrText(std::move(e));
    if (auto e = c.Barrier("end", kWorld, 3s)) return ErrText(std::move(e));
    return "";
  };
  std::vector<Child> children;
  for (int r = 1; r < kWorld; ++r) children.push_back(Fork(r, kWorld, body));
  auto t = StartTestServer(kWorld);
  ASSERT_TRUE(t);
  for (auto& c : children) SendPort(c, t->port());
  std::vector<std::string> reports;
  std::thread collector([&] {
    for (auto& c : children) reports.push_back(Collect(c));
  });
  RDZV_ASSIGN(auto rank0, StoreClient::Join(t->Options(0, kWorld)));
  RDZV_OK(rank0->Set("addr/0", "pid-0"));
  RDZV_OK(rank0->Barrier("start", kWorld, 3s));
  std::string id(128, '\0');
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(255 - i);
  RDZV_OK(rank0->Set("nccl/unique_id", id));
  RDZV_OK(rank0->Barrier("end", kWorld, 3s));
  collector.join();
  for (const auto& rep : reports) EXPECT_EQ(rep, "");
  std::vector<std::string> echoes;
  for (int r = 1; r < kWorld; ++r) echoes.push_back(fmt::format("echo/{}", r));
  RDZV_OK(rank0->Wait(echoes, 1s));
  for (const auto& k : echoes) {
    RDZV_ASSIGN(std::string v, rank0->Get(k, 0ms));
    EXPECT_EQ(v, id);
  }
  RDZV_ASSIGN(int64_t arrivals, rank0->Add("arrivals", 0));
  EXPECT_EQ(arrivals, kWorld - 1);
  RDZV_OK(t->server->WaitForAll(0ms));
}

TEST(RendezvousProcesses, AKilledRankIsNamedByTheBarrierAndTheStoreSurvives) {
  constexpr int kWorld = 3;
  // Rank 1 joins and blocks; rank 2 joins and dies before the barrier.
  std::vector<Child> children;
  children.push_back(Fork(1, kWorld, [](StoreClient& c) -> std::string {
    auto e = c.Barrier("init", kWorld, 400ms);
    if (!e) return "the barrier passed without rank 2";
    auto f = TakeFailure(std::move(e));
    // Rank 0 may arrive before or after this rank gives up: "rank 2" or "ranks 0, 2".
    if (f.code != StoreErrc::kTimeout || f.message.find("2 never arrived") == std::string::npos) return f.message;
    return "";
  }));
  children.push_back(Fork(2, kWorld, [](StoreClient&) -> std::string {
    ::kill(::getpid(), SIGKILL);
    return "not reached";
  }));
  auto t = StartTestServer(kWorld);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto rank0, StoreClient::Join(t->Options(0, kWorld)));
  for (auto& c : children) SendPort(c, t->port());
  std::string rank1_report;
  std::thread collector([&] { rank1_report = Collect(children[0]); });
  std::string rank2_report = Collect(children[1]);
  EXPECT_NE(rank2_report.find("child failed"), std::string::npos);
  EXPECT_TRUE(WaitUntil([&] { return t->server->Stats().joined_ranks == 3; }));
  std::string rank1_arrived = "avf/barrier/init/0/arrived/1";
  RDZV_OK(rank0->Wait(std::span<const std::string>(&rank1_arrived, 1), 2s));
  ExpectFailure(rank0->Barrier("init", kWorld, 400ms), StoreErrc::kTimeout,
                {"2 of 3 participants arrived", "rank 2 never arrived"});
  collector.join();
  EXPECT_EQ(rank1_report, "");
  // Rank 2 joined before it died; its slot is free for a restarted process.
  EXPECT_TRUE(WaitUntil([&] { return t->server->Stats().connected_ranks == 1; }));
  RDZV_ASSIGN(auto again, StoreClient::Join(t->Options(2, kWorld)));
  RDZV_OK(again->Set("back", "1"));
}

}  // namespace
}  // namespace avf::rendezvous::testing
