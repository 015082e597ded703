#include "run/preflight.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

#include "run/ib_ports.h"
#include "run/preflight_device.h"

namespace avf::run::preflight {

namespace {

using Clock = std::chrono::steady_clock;

// Rank 0 prints every problem; a job of thousands of ranks that lost a peer
// would print one per rank, so the rest are counted.
constexpr size_t kShownProblems = 40;

auto RankKey(int64_t rank) -> std::string { return fmt::format("avf/preflight/rank/{}", rank); }
auto NodeKey(int64_t node) -> std::string { return fmt::format("avf/preflight/node/{}", node); }
auto TimingKey(int64_t rank) -> std::string { return fmt::format("avf/preflight/timing/{}", rank); }
auto DoneKey(int64_t rank) -> std::string { return fmt::format("avf/preflight/done/{}", rank); }
constexpr const char* kGoKey = "avf/preflight/go";
constexpr const char* kVerdictKey = "avf/preflight/verdict";

auto Error(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto Optional(const char* name) -> std::optional<std::string> {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// The name people know the node by: $AVF_NODE_NAME (a pod's host name is the
// pod's name, not its machine's), else the host name.
auto HostLabel() -> std::string {
  if (const char* name = std::getenv("AVF_NODE_NAME"); name && *name) return name;
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? std::string(host) : "unknown host";
}

auto CheckNodePorts(const runtime::RunPlan& plan) -> PortCheck {
  auto scope = DecidePortScope(Optional("NCCL_IB_HCA"), Optional("NCCL_IB_DISABLE"), plan.hardware.network);
  if (!scope) {
    return PortCheck{.checked = true, .note = "NCCL_IB_HCA", .problems = {llvm::toString(scope.takeError())}};
  }
  return CheckPorts(SysfsRoot(), *scope);
}

// Each rank contributes 1 + rank mod 8, so the sum is exact in fp32 for any
// order of addition up to millions of ranks, and a rank's missing or doubled
// contribution shows.
auto Contribution(int rank) -> float { return static_cast<float>(1 + rank % 8); }

auto ExpectedSum(int ranks) -> float {
  int64_t sum = 0;
  for (int r = 0; r < ranks; ++r) sum += 1 + r % 8;
  return static_cast<float>(sum);
}

// One checked all-reduce, `warmup` more, then the mean seconds of
// `iterations` all-reduces started together (after a barrier).
auto TimeAllReduce(comm::Communicator& c, Device& d, size_t count, const Options& o, std::string_view what)
    -> llvm::Expected<double> {
  auto fail = [&](llvm::Error e) {
    return Error(fmt::format("the {} all-reduce failed: {}", what, llvm::toString(std::move(e))));
  };
  if (auto e = d.Fill(Contribution(c.rank()))) return fail(std::move(e));
  if (auto e = c.AllReduce(d.data(), count, comm::ReduceOp::kSum)) return fail(std::move(e));
  const float expected = ExpectedSum(c.size());
  auto mismatch = d.FirstMismatch(expected);
  if (!mismatch) return fail(mismatch.takeError());
  if (*mismatch) {
    return Error(fmt::format(
        "the {} all-reduce summed wrong: element {} is {}, expected {} (each of its {} ranks adds 1 + its rank mod 8)",
        what, (*mismatch)->index, (*mismatch)->value, expected, c.size()));
  }
  if (auto e = d.Fill(0)) return fail(std::move(e));
  for (int64_t i = 0; i < o.warmup; ++i) {
    if (auto e = c.AllReduce(d.data(), count, comm::ReduceOp::kSum)) return fail(std::move(e));
  }
  if (auto e = c.Barrier()) return fail(std::move(e));
  auto start = Clock::now();
  for (int64_t i = 0; i < o.iterations; ++i) {
    if (auto e = c.AllReduce(d.data(), count, comm::ReduceOp::kSum)) return fail(std::move(e));
  }
  std::chrono::duration<double> elapsed = Clock::now() - start;
  return elapsed.count() / static_cast<double>(o.iterations);
}

void PrintProblems(const std::vector<std::string>& problems) {
  for (size_t i = 0; i < problems.size() && i < kShownProblems; ++i) {
    llvm::errs() << "avf-run: error: " << problems[i] << "\n";
  }
  if (problems.size() > kShownProblems) {
    llvm::errs() << fmt::format("avf-run: error: ... and {} more problems\n", problems.size() - kShownProblems);
  }
}

auto Print(const Verdict& v) -> int {
  for (const std::string& line : v.lines) llvm::outs() << line << "\n";
  llvm::outs() << v.summary << "\n";
  llvm::outs().flush();
  PrintProblems(v.problems);
  return v.passed() ? 0 : 1;
}

auto Report(llvm::Error e) -> int {
  llvm::errs() << "avf-run: error: " << llvm::toString(std::move(e)) << "\n";
  return 1;
}

class Rank {
 public:
  Rank(const runtime::RunPlan& plan, const runtime::RankIdentity& id, World& world, const Options& o)
      : plan_(plan), id_(id), world_(world), o_(o) {
    shape_ = Shape{.job = plan.job.name,
                   .nodes = id.nnodes,
                   .ranks_per_node = id.nproc_per_node,
                   .gpu = o.gpu,
                   .bytes = o.bytes,
                   .iterations = o.iterations,
                   .warmup = o.warmup};
  }

  auto Run() -> int {
    CheckLocally();
    if (!world_.store) return Alone();
    if (auto e = Publish()) return Report(std::move(e));
    if (id_.rank != 0) return Follow();
    Gathered g = GatherChecks();
    std::string skip = SkipReason(g);
    if (auto e = world_.store->Set(kGoKey, skip.empty() ? "run" : "skip")) return Report(std::move(e));
    if (skip.empty()) {
      RankTiming mine = Measure();
      GatherTimings(g, mine);
    }
    return Conclude(g);
  }

 private:
  auto Ranks() const -> int64_t { return shape_.ranks(); }

  void CheckLocally() {
    check_.rank = id_.rank;
    auto device =
        o_.gpu ? OpenGpu(static_cast<int>(id_.local_rank)) : llvm::Expected<std::unique_ptr<Device>>(OpenCpu());
    if (device) {
      device_ = std::move(*device);
      check_.device = device_->Describe();
      if (auto e = device_->Allocate(o_.bytes / sizeof(float))) check_.problem = llvm::toString(std::move(e));
      else if (auto e = device_->Fill(0)) check_.problem = llvm::toString(std::move(e));
    } else {
      check_.device = "unusable";
      check_.problem = llvm::toString(device.takeError());
    }
    if (id_.local_rank == 0)
      node_ = NodeCheck{.node = id_.node_rank, .host = HostLabel(), .ports = CheckNodePorts(plan_)};
  }

  // The node's results first: rank 0 reads a rank's result as "its node's are there too".
  auto Publish() -> llvm::Error {
    if (node_) {
      if (auto e = world_.store->Set(NodeKey(node_->node), Encode(*node_))) return e;
    }
    return world_.store->Set(RankKey(id_.rank), Encode(check_));
  }

  // The values of `keys` that exist after waiting up to `wait` for all of
  // them; nullopt for the others.
  auto Collect(const std::vector<std::string>& keys, std::chrono::milliseconds wait)
      -> std::vector<std::optional<std::string>> {
    std::vector<std::optional<std::string>> values(keys.size());
    llvm::consumeError(world_.store->Wait(keys, wait));
    auto present = world_.store->Check(keys);
    if (!present) {
      llvm::consumeError(present.takeError());
      return values;
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!(*present)[i]) continue;
      auto value = world_.store->Get(keys[i], Millis(o_.peer_timeout_s));
      if (value) values[i] = std::move(*value);
      else llvm::consumeError(value.takeError());
    }
    return values;
  }

  template <class T, class Decode>
  void Decode1(const std::optional<std::string>& value, std::optional<T>& out, Decode decode, Gathered& g) {
    if (!value) return;
    auto decoded = decode(*value);
    if (decoded) out = std::move(*decoded);
    else g.unreadable.push_back(llvm::toString(decoded.takeError()));
  }

  auto GatherChecks() -> Gathered {
    Gathered g{.nodes = std::vector<std::optional<NodeCheck>>(shape_.nodes),
               .ranks = std::vector<std::optional<RankCheck>>(Ranks()),
               .check_wait_s = o_.join_timeout_s,
               .timing_wait_s = o_.join_timeout_s + o_.peer_timeout_s};
    std::vector<std::string> keys;
    for (int64_t r = 0; r < Ranks(); ++r) keys.push_back(RankKey(r));
    for (int64_t n = 0; n < shape_.nodes; ++n) keys.push_back(NodeKey(n));
    auto values = Collect(keys, Millis(o_.join_timeout_s));
    for (int64_t r = 0; r < Ranks(); ++r) Decode1(values[r], g.ranks[r], DecodeRankCheck, g);
    for (int64_t n = 0; n < shape_.nodes; ++n) Decode1(values[Ranks() + n], g.nodes[n], DecodeNodeCheck, g);
    return g;
  }

  // The all-reduces over this node's ranks (when it has several) and over
  // the world, on the world communicator this device makes.
  auto Measure() -> RankTiming {
    RankTiming t{.rank = id_.rank};
    size_t count = o_.bytes / sizeof(float);
    if (Ranks() == 1) return t;
    comm::TcpOptions mesh = MeshOptions(world_, id_, o_.join_timeout_s, o_.peer_timeout_s);
    mesh.id = "preflight";  // not the training's `world`, which may follow on the same store
    auto world = device_->CreateWorld(mesh);
    if (!world) {
      t.problem = "cannot build the world communicator: " + llvm::toString(world.takeError());
      return t;
    }
    // On one node the world is the node: its all-reduce is measured once.
    if (shape_.ranks_per_node > 1 && shape_.nodes > 1) {
      auto node = (*world)->Split(static_cast<int>(id_.node_rank), static_cast<int>(id_.local_rank));
      if (!node) {
        t.problem = "cannot build the node's communicator: " + llvm::toString(node.takeError());
        return t;
      }
      auto s = TimeAllReduce(**node, *device_, count, o_, "node");
      if (!s) {
        t.problem = llvm::toString(s.takeError());
        return t;
      }
      t.node_s = *s;
    }
    auto s = TimeAllReduce(**world, *device_, count, o_, "world");
    if (!s) {
      t.problem = llvm::toString(s.takeError());
      return t;
    }
    t.world_s = *s;
    if (shape_.nodes == 1) t.node_s = *s;
    return t;
  }

  void GatherTimings(Gathered& g, const RankTiming& mine) {
    g.timings.assign(Ranks(), std::nullopt);
    g.timings[0] = mine;
    std::vector<std::string> keys;
    for (int64_t r = 1; r < Ranks(); ++r) keys.push_back(TimingKey(r));
    auto values = Collect(keys, Millis(g.timing_wait_s));
    for (int64_t r = 1; r < Ranks(); ++r) Decode1(values[r - 1], g.timings[r], DecodeRankTiming, g);
  }

  // Rank 0: the table, the verdict for every rank, and its own status once
  // the others have read it (its store goes when it exits).
  auto Conclude(const Gathered& g) -> int {
    Verdict v = Judge(shape_, o_.limits, g);
    int status = Print(v);
    if (auto e = world_.store->Set(kVerdictKey, EncodeProblems(v))) return Report(std::move(e));
    std::vector<std::string> done;
    for (int64_t r = 1; r < Ranks(); ++r) {
      if (g.ranks[r]) done.push_back(DoneKey(r));
    }
    if (!done.empty()) llvm::consumeError(world_.store->Wait(done, Millis(o_.peer_timeout_s)));
    return status;
  }

  // Every other rank: measure when rank 0 says so, then exit with its verdict.
  auto Follow() -> int {
    // Rank 0 decides within the join timeout of starting to wait for the
    // checks; the verdict comes once every rank's times are in, at most the
    // join and peer timeouts after rank 0's own (a communicator that never
    // forms takes the first).
    auto slack = std::chrono::seconds(30);
    auto go = world_.store->Get(kGoKey, Millis(o_.join_timeout_s) + slack);
    if (!go) return Report(go.takeError());
    if (*go == "run") {
      if (auto e = world_.store->Set(TimingKey(id_.rank), Encode(Measure()))) return Report(std::move(e));
    }
    auto verdict = world_.store->Get(kVerdictKey, Millis(2 * o_.join_timeout_s + o_.peer_timeout_s) + slack);
    if (!verdict) return Report(verdict.takeError());
    llvm::consumeError(world_.store->Set(DoneKey(id_.rank), "1"));
    std::vector<std::string> problems = DecodeProblems(*verdict);
    if (id_.local_rank == 0) PrintProblems(problems);
    return problems.empty() ? 0 : 1;
  }

  // A world of one rank: no store, no communicator.
  auto Alone() -> int {
    Gathered g{.nodes = {node_}, .ranks = {check_}};
    if (SkipReason(g).empty()) g.timings = {Measure()};
    return Print(Judge(shape_, o_.limits, g));
  }

  const runtime::RunPlan& plan_;
  const runtime::RankIdentity& id_;
  World& world_;
  const Options& o_;
  Shape shape_;
  std::unique_ptr<Device> device_;
  RankCheck check_;
  std::optional<NodeCheck> node_;
};

}  // namespace

auto RunRank(const runtime::RunPlan& plan, const runtime::RankIdentity& id, World& world, const Options& o) -> int {
  return Rank(plan, id, world, o).Run();
}

}  // namespace avf::run::preflight
