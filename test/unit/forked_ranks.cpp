#include "forked_ranks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "comm/errors.h"
#include "rendezvous/socket.h"
#include "rendezvous/store.h"

namespace avf::comm::testing {

using namespace std::chrono_literals;
using rendezvous::net::Clock;
namespace net = rendezvous::net;

const std::string kToken = "comm-test-token-0123456789abcdef";
const std::string kPlanSha256(64, 'c');

auto Text(llvm::Error e) -> std::string { return e ? comm::TakeFailure(std::move(e)).message : std::string(); }

auto Spawn(const std::function<std::string(uint16_t)>& body) -> Child {
  int to[2], from[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to) != 0 ||
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, from) != 0) {
    return {};
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(to[1]);
    ::close(from[0]);
    uint16_t value = 0;
    std::string report = "no value from the parent";
    if (net::RecvExact(to[0], reinterpret_cast<char*>(&value), sizeof value, Clock::now() + 10s).done == sizeof value) {
      report = body(value);
    }
    net::SendAll(from[1], report.empty() ? "ok" : report, Clock::now() + 1s);
    ::_exit(0);  // no gtest teardown, no atexit handlers in the child
  }
  ::close(to[0]);
  ::close(from[1]);
  return {pid, to[1], from[0]};
}

void Give(Child& c, uint16_t value) {
  net::SendAll(c.in_fd, std::string_view(reinterpret_cast<const char*>(&value), sizeof value), Clock::now() + 1s);
  ::close(c.in_fd);
}

auto Reap(Child& c, Clock::time_point deadline) -> std::string {
  std::string report;
  char buf[4096];
  for (;;) {
    auto io = net::RecvExact(c.report_fd, buf, sizeof buf, deadline);
    report.append(buf, io.done);
    if (io.kind != net::IoResult::kOk) break;
  }
  ::close(c.report_fd);
  int status = 0;
  if (::waitpid(c.pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      report = "hung: " + report;
      ::kill(c.pid, SIGKILL);
    }
    ::waitpid(c.pid, &status, 0);
  }
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGKILL ? "killed" : fmt::format("signal {}", WTERMSIG(status));
  // A child that died early (a sanitizer report exits 1) sends nothing.
  if (report.empty() || WEXITSTATUS(status) != 0)
    return fmt::format("exit {}, report '{}'", WEXITSTATUS(status), report);
  return report == "ok" ? "" : report;
}

namespace {

auto RankMain(int rank, int size, uint16_t port, const RunSetup& setup, const Body& body) -> std::string {
  auto store = rendezvous::StoreClient::Join({.port = port,
                                              .rank = rank,
                                              .world_size = size,
                                              .token = kToken,
                                              .plan_sha256 = kPlanSha256,
                                              .connect_timeout = 3s,
                                              .io_timeout = 3s});
  if (!store) return "join: " + Text(store.takeError());
  TcpOptions o;
  o.store = std::shared_ptr<rendezvous::StoreClient>(std::move(*store));
  o.rank = rank;
  o.size = size;
  o.token = kToken;
  o.timeout = setup.timeout;
  o.setup_timeout = 2s;
  if (setup.tweak) setup.tweak(o);
  auto world = TcpCommunicator::Create(std::move(o));
  if (!world) return "create: " + Text(world.takeError());
  return body(**world);
}

}  // namespace

// Runs `body` on `size` forked ranks; one report per rank.
auto RunRanks(int size, const Body& body, const RunSetup& setup) -> std::vector<std::string> {
  std::vector<Child> children;
  for (int r = 0; r < size; ++r) {
    children.push_back(Spawn([&, r](uint16_t port) { return RankMain(r, size, port, setup, body); }));
  }
  rendezvous::ServerOptions so;
  so.host = "127.0.0.1";
  so.world_size = size;
  so.token = kToken;
  so.plan_sha256 = kPlanSha256;
  auto server = rendezvous::StoreServer::Start(std::move(so));
  if (!server) return {"server: " + Text(server.takeError())};
  uint16_t port = (*server)->port();
  for (auto& c : children) Give(c, port);
  if (setup.kill_rank >= 0) {
    std::this_thread::sleep_for(setup.kill_after);
    ::kill(children[setup.kill_rank].pid, SIGKILL);
  }
  auto deadline = Clock::now() + 12s;
  std::vector<std::string> reports;
  for (auto& c : children) reports.push_back(Reap(c, deadline));
  return reports;
}

void ExpectAllOk(const std::vector<std::string>& reports) {
  for (size_t r = 0; r < reports.size(); ++r) EXPECT_EQ(reports[r], "") << "rank " << r;
}

}  // namespace avf::comm::testing
