#include "run/elastic_launcher.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include "plan/elastic_plan.h"
#include "plan_format/child_table.h"
#include "plan_format/launch.h"
#include "rendezvous/membership.h"
#include "rendezvous/token.h"
#include "run/launcher.h"
#include "run/world.h"

namespace avf::run {

namespace {

namespace pf = plan_format;
namespace rdzv = rendezvous;

auto Problem(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto Variable(const char* name) -> std::optional<std::string> {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// "HOST:PORT" with a port from 1 to 65535.
auto ReadEndpoint(ElasticNode& node) -> llvm::Error {
  std::optional<std::string> endpoint = Variable(pf::kEnvRdzvEndpoint);
  if (!endpoint) {
    return Problem(fmt::format("{} is MIN:MAX, an elastic start: {} must name node slot 0's launcher (HOST:PORT)",
                               pf::kEnvNodes, pf::kEnvRdzvEndpoint));
  }
  auto [host, port] = llvm::StringRef(*endpoint).rsplit(':');
  if (host.empty() || !llvm::to_integer(port, node.rdzv_port, 10) || node.rdzv_port < 1 || node.rdzv_port > 65535) {
    return Problem(fmt::format("{}={} is not HOST:PORT (a port from 1 to 65535)", pf::kEnvRdzvEndpoint, *endpoint));
  }
  node.rdzv_host = host.str();
  return llvm::Error::success();
}

auto ReadCount(const char* name, const std::string& text, int64_t lo, int64_t hi, int64_t& out) -> llvm::Error {
  if (llvm::to_integer(text, out, 10) && out >= lo && out <= hi) return llvm::Error::success();
  return Problem(fmt::format("{}={}: expected a whole number from {} to {}", name, text, lo, hi));
}

// The node counts with a layout within the launchers' MIN:MAX, ascending.
auto CountsOf(const runtime::RunPlan& plan, const ElasticNode& node) -> std::vector<int64_t> {
  std::vector<int64_t> counts;
  for (const runtime::PlanElasticLayout& e : plan.elastic->layouts) {
    if (e.nodes >= node.min_nodes && e.nodes <= node.max_nodes) counts.push_back(e.nodes);
  }
  std::sort(counts.begin(), counts.end());
  return counts;
}

void SetVariable(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

// One launcher's rounds: the store, the membership, and what it logs.
class ElasticLauncher {
 public:
  ElasticLauncher(const std::vector<std::string>& args, const runtime::PlanFile& file,
                  const runtime::IdentityFlags& flags, const ElasticNode& node, ElasticTimeouts timeouts)
      : args_(args), file_(file), flags_(flags), node_(node), timeouts_(timeouts) {}

  auto Run() -> int {
    if (llvm::Error e = Connect()) return Fail(std::move(e));
    // From here a stop ends the wait for a round, or reaches the ranks.
    pf::ForwardStopSignals();
    rdzv::Membership membership(*client_, {.slot = node_.slot,
                                           .slots = static_cast<int>(node_.max_nodes),
                                           .counts = CountsOf(*file_.plan, node_),
                                           .join_timeout = Millis(timeouts_.join_s),
                                           .last_call = Millis(timeouts_.last_call_s),
                                           .stop_requested = [] { return pf::ForwardedSignal() != 0; }});
    membership_ = &membership;
    int restarts = 0;
    for (;;) {
      auto round = membership.NextRound();
      if (!round && pf::ForwardedSignal() != 0) {
        llvm::consumeError(round.takeError());
        Log(fmt::format("stopped on signal {} ({}) between rounds", pf::ForwardedSignal(),
                        strsignal(pf::ForwardedSignal())));
        return End(128 + pf::ForwardedSignal());
      }
      if (!round) return Fail(round.takeError());
      if (round->done) {
        Log(fmt::format("the job ended (status {}); this launcher waited and leaves", *round->done));
        return *round->done;
      }
      LogRound(*round);
      if (round->node_rank < 0) continue;
      int status = TrainRound(*round);
      if (status < 0) return End(1);  // the round's layout or node could not be resolved (reported)
      if (status == 0 || pf::ForwardedSignal() != 0) return End(status);
      auto regrow = host() ? llvm::Expected<bool>(regrow_) : membership.RegrowRequested(round->round);
      if (!regrow) return Fail(regrow.takeError());
      if (!*regrow && ++restarts > node_.max_restarts) {
        Log(fmt::format("its ranks ended with status {}, and it has rejoined {} times ({}={}); it stops", status,
                        node_.max_restarts, pf::kEnvMaxRestarts, node_.max_restarts));
        return End(status);
      }
      Log(*regrow ? "the job grows: joining the next round"
                  : fmt::format("its ranks ended with status {}; joining the next round (rejoin {} of {})", status,
                                restarts, node_.max_restarts));
    }
  }

 private:
  auto host() const -> bool { return node_.slot == 0; }

  void Log(const std::string& line) const {
    llvm::outs() << fmt::format("avf-run: elastic: node slot {}: {}\n", node_.slot, line);
    llvm::outs().flush();
  }

  auto Connect() -> llvm::Error {
    auto token = rdzv::TokenFromEnvironment();
    if (!token) return token.takeError();
    token_ = *token;
    int slots = static_cast<int>(node_.max_nodes);
    if (host()) {
      auto server = rdzv::StoreServer::Start(
          {.port = static_cast<uint16_t>(node_.rdzv_port),
           .world_size = slots,
           .token = token_,
           .plan_sha256 = file_.sha256,
           .log = [](std::string_view line) { llvm::errs() << "avf-run: elastic store: " << line << "\n"; }});
      if (!server) return server.takeError();
      server_ = std::move(*server);
    }
    auto client = rdzv::StoreClient::Join({.host = node_.rdzv_host,
                                           .port = static_cast<uint16_t>(node_.rdzv_port),
                                           .rank = node_.slot,
                                           .world_size = slots,
                                           .token = token_,
                                           .plan_sha256 = file_.sha256,
                                           .connect_timeout = Millis(timeouts_.join_s)});
    if (!client) return client.takeError();
    client_ = std::move(*client);
    return llvm::Error::success();
  }

  void LogRound(const rdzv::RoundResult& r) const {
    if (host()) {
      Log(
          fmt::format("round {}: {} of {} node launchers joined; training on {} nodes (slots {}); node count changes "
                      "so far: {}",
                      r.round, r.joined, node_.max_nodes, r.nodes, fmt::join(r.slots, ", "), r.changes));
    }
    if (r.node_rank < 0) {
      Log(fmt::format("round {}: not among the {} nodes; it waits for the next round", r.round, r.nodes));
    } else {
      Log(fmt::format("round {}: node {} of {}", r.round, r.node_rank, r.nodes));
    }
  }

  auto SetupFailed(llvm::Error e) -> int {
    llvm::errs() << fmt::format("avf-run: error: elastic: node slot {}: {}\n", node_.slot,
                                llvm::toString(std::move(e)));
    return -1;
  }

  // This node's ranks with the round's node count, rank 0's store and a
  // token of the round's own (a rank of an earlier round is refused); -1
  // when the round's layout or this node cannot be resolved.
  auto TrainRound(const rdzv::RoundResult& r) -> int {
    SetVariable(pf::kEnvNodes, std::to_string(r.nodes));
    SetVariable(pf::kEnvNodeRank, std::to_string(r.node_rank));
    SetVariable(pf::kEnvNodeCountChanges, std::to_string(r.changes));
    SetVariable(pf::kEnvJobToken, fmt::format("{}-round-{}", token_, r.round));
    unsetenv(pf::kEnvJobTokenFile);
    if (!Variable(pf::kEnvMasterAddr)) SetVariable(pf::kEnvMasterAddr, node_.rdzv_host);
    if (!Variable(pf::kEnvMasterPort)) SetVariable(pf::kEnvMasterPort, std::to_string(node_.rdzv_port + 1));
    auto plan = runtime::AtNodeCount(file_.plan, r.nodes);
    if (!plan) return SetupFailed(plan.takeError());
    auto node = runtime::ResolveNode(flags_, runtime::ProcessEnvironment(), **plan);
    if (!node) return SetupFailed(node.takeError());
    const runtime::PlanLayout& l = (*plan)->layout;
    Log(fmt::format("round {}: tensor {}, pipeline {}, data {}, micro-batch {}", r.round, l.tensor, l.pipeline, l.data,
                    l.micro_batch));
    regrow_ = false;
    std::function<void()> look = [&] { GrowIfWaiting(r); };
    return LaunchNode(args_, *node, host() ? look : std::function<void()>());
  }

  // The host, while a round trains: when launchers wait that would make a
  // larger count with a layout, the round stops at a checkpoint and the
  // next one takes them in.
  void GrowIfWaiting(const rdzv::RoundResult& r) {
    if (regrow_) return;
    auto waiting = membership_->Waiting(r.round);
    if (!waiting) {
      llvm::consumeError(waiting.takeError());
      return;
    }
    int64_t best = membership_->BestCount(r.nodes + *waiting);
    if (best <= r.nodes) return;
    Log(fmt::format("round {}: {} launchers wait; stopping the ranks at a checkpoint to grow from {} to {} nodes",
                    r.round, *waiting, r.nodes, best));
    if (llvm::Error e = membership_->RequestRegrow(r.round)) {
      llvm::consumeError(std::move(e));
      return;
    }
    regrow_ = true;
    StopRanks();
  }

  // The host keeps the store up until the launchers waiting for a round
  // have read the end (they look every second) and left, at most 10 s.
  auto End(int status) -> int {
    if (!host()) return status;
    if (llvm::Error e = membership_->Finish(status)) llvm::consumeError(std::move(e));
    client_.reset();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server_->Stats().connected_ranks > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return status;
  }

  // A launcher that lost the host says so: the job ends with it (the
  // training object's restart starts it again, from the newest checkpoint).
  auto Fail(llvm::Error e) -> int {
    rdzv::Failure f = rdzv::TakeFailure(std::move(e));
    bool lost = f.code == rdzv::StoreErrc::kConnectionLost || f.code == rdzv::StoreErrc::kShutdown;
    std::string where = fmt::format("{}:{}", node_.rdzv_host, node_.rdzv_port);
    if (!host() && f.code == rdzv::StoreErrc::kUnreachable) {
      llvm::errs() << fmt::format(
          "avf-run: error: elastic: node slot {}: cannot reach node slot 0's launcher, which hosts the rounds, at {} "
          "({}) within {} s\n",
          node_.slot, where, pf::kEnvRdzvEndpoint, timeouts_.join_s);
      return 1;
    }
    if (!host() && lost) {
      llvm::errs() << fmt::format(
          "avf-run: error: elastic: node slot {}: node slot 0's launcher, which hosts the rounds at {}, is gone; the "
          "job ends with it ({})\n",
          node_.slot, where, f.message);
      return 1;
    }
    llvm::errs() << fmt::format("avf-run: error: elastic: node slot {}{}: {}\n", node_.slot,
                                host() ? "" : fmt::format(" (rounds hosted at {})", where), f.message);
    return host() && membership_ ? End(1) : 1;
  }

  const std::vector<std::string>& args_;
  const runtime::PlanFile& file_;
  const runtime::IdentityFlags& flags_;
  ElasticNode node_;
  ElasticTimeouts timeouts_;
  std::string token_;
  std::unique_ptr<rdzv::StoreServer> server_;
  std::unique_ptr<rdzv::StoreClient> client_;
  rdzv::Membership* membership_ = nullptr;
  bool regrow_ = false;
};

}  // namespace

auto ReadElasticNode() -> llvm::Expected<std::optional<ElasticNode>> {
  std::optional<std::string> nnodes = Variable(pf::kEnvNodes);
  if (!nnodes || nnodes->find(':') == std::string::npos) return std::nullopt;
  ElasticNode node;
  auto [lo, hi] = llvm::StringRef(*nnodes).split(':');
  if (!llvm::to_integer(lo, node.min_nodes, 10) || !llvm::to_integer(hi, node.max_nodes, 10) || node.min_nodes < 1 ||
      node.max_nodes < node.min_nodes || node.max_nodes > pf::kMaxChildren) {
    return Problem(
        fmt::format("{}={} is not MIN:MAX with 1 <= MIN <= MAX <= {}", pf::kEnvNodes, *nnodes, pf::kMaxChildren));
  }
  if (llvm::Error e = ReadEndpoint(node)) return e;
  std::optional<std::string> slot = Variable(pf::kEnvNodeSlot);
  if (!slot) {
    return Problem(fmt::format("{}={} is an elastic start: {} must give this launcher's slot, 0-{}", pf::kEnvNodes,
                               *nnodes, pf::kEnvNodeSlot, node.max_nodes - 1));
  }
  int64_t value = 0;
  if (llvm::Error e = ReadCount(pf::kEnvNodeSlot, *slot, 0, node.max_nodes - 1, value)) return e;
  node.slot = static_cast<int>(value);
  if (std::optional<std::string> restarts = Variable(pf::kEnvMaxRestarts)) {
    if (llvm::Error e = ReadCount(pf::kEnvMaxRestarts, *restarts, 0, 1000, value)) return e;
    node.max_restarts = static_cast<int>(value);
  }
  return node;
}

auto LaunchElastic(const std::vector<std::string>& args, const runtime::PlanFile& file,
                   const runtime::IdentityFlags& flags, const ElasticNode& node, ElasticTimeouts timeouts) -> int {
  if (!file.plan->elastic) {
    llvm::errs() << fmt::format(
        "avf-run: error: {}={}:{} asks for an elastic start, but job `{}` is not elastic (its plan.json has no "
        "`elastic`); set {} to its node count, {}\n",
        pf::kEnvNodes, node.min_nodes, node.max_nodes, file.plan->job.name, pf::kEnvNodes, file.plan->hardware.nodes);
    return 1;
  }
  if (CountsOf(*file.plan, node).empty()) {
    llvm::errs() << fmt::format(
        "avf-run: error: {}={}:{}: job `{}` has no layout on any of those node counts; it has "
        "one on {} nodes\n",
        pf::kEnvNodes, node.min_nodes, node.max_nodes, file.plan->job.name, runtime::NodeCountsText(*file.plan));
    return 1;
  }
  return ElasticLauncher(args, file, flags, node, timeouts).Run();
}

}  // namespace avf::run
