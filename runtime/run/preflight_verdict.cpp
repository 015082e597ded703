// Rank 0's reading of the preflight reports: one line per node, the world
// all-reduce, and every problem as a sentence that names its node.
#include <algorithm>

#include <fmt/format.h>

#include "rendezvous/errors.h"
#include "run/preflight_report.h"

namespace avf::run::preflight {

namespace {

auto Plural(int64_t n, std::string_view word) -> std::string {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

auto Join(const std::vector<std::string>& parts, std::string_view sep) -> std::string {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

auto Wait(double seconds) -> std::string {
  return rendezvous::FormatSeconds(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

// "0-7", "0-2, 5": ascending numbers as ranges.
auto Ranges(const std::vector<int64_t>& numbers) -> std::string {
  std::string out;
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") +
           (j == i ? std::to_string(numbers[i]) : fmt::format("{}-{}", numbers[i], numbers[j]));
    i = j + 1;
  }
  return out;
}

// One node of what rank 0 gathered, and what is said about it.
class NodeJudge {
 public:
  NodeJudge(const Shape& s, const Limits& limits, const Gathered& g, int64_t node)
      : s_(s), limits_(limits), g_(g), node_(node), check_(g.nodes[node]) {
    label_ = check_ && !check_->host.empty() ? fmt::format("node {} ({})", node, check_->host)
                                             : fmt::format("node {}", node);
  }

  auto label() const -> const std::string& { return label_; }
  auto problems() const -> const std::vector<std::string>& { return problems_; }

  auto Line() -> std::string {
    std::vector<std::string> parts = {DevicePart(), PortPart()};
    if (!g_.timings.empty()) TimingParts(parts);
    CheckRanks();
    CheckPorts();
    if (!g_.timings.empty()) CheckTimings();
    return fmt::format("{} {}: {}", label_, problems_.empty() ? "ok" : "FAILED", Join(parts, "; "));
  }

 private:
  auto Rank(int64_t local) const -> int64_t { return node_ * s_.ranks_per_node + local; }

  void Add(std::string problem) { problems_.push_back(fmt::format("{}: {}", label_, problem)); }

  // "cpu (no device check)", "gpu 0-7 NVIDIA H100 80GB HBM3 (79.1 GiB)",
  // "gpu 0-2 ..., gpu 3 FAILED, gpu 4-7 ...".
  auto DevicePart() const -> std::string {
    std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
    for (int64_t l = 0; l < s_.ranks_per_node; ++l) {
      const auto& r = g_.ranks[Rank(l)];
      std::string what = !r ? "missing" : !r->problem.empty() ? "FAILED" : r->device;
      if (groups.empty() || groups.back().first != what) groups.push_back({what, {}});
      groups.back().second.push_back(l);
    }
    if (!s_.gpu && groups.size() == 1 && groups[0].first == "cpu") return "cpu (no device check)";
    std::vector<std::string> parts;
    for (const auto& [what, locals] : groups) {
      std::string unit = s_.gpu ? "gpu" : locals.size() == 1 ? "local rank" : "local ranks";
      parts.push_back(fmt::format("{} {} {}", unit, Ranges(locals), what));
    }
    return Join(parts, ", ");
  }

  auto PortPart() const -> std::string {
    if (!check_) return "ib ports unknown";
    const PortCheck& p = check_->ports;
    if (!p.checked) return fmt::format("ib ports not checked ({})", p.note);
    std::vector<std::string> ports;
    for (const PortState& port : p.ports) {
      bool rate = port.active() && !port.rate.empty();  // a link that is down has no rate worth showing
      ports.push_back(fmt::format("{} {}{}", port.name(), port.state, rate ? " " + port.rate : ""));
    }
    return "ib ports " + (ports.empty() ? std::string("none") : Join(ports, ", "));
  }

  // The slowest of the node's ranks, when every one of them measured it.
  auto Slowest(std::optional<double> RankTiming::*field) const -> std::optional<double> {
    double slowest = 0;
    for (int64_t l = 0; l < s_.ranks_per_node; ++l) {
      const auto& t = g_.timings[Rank(l)];
      if (!t || !(*t.*field)) return std::nullopt;
      slowest = std::max(slowest, *(*t.*field));
    }
    return slowest;
  }

  void TimingParts(std::vector<std::string>& parts) {
    if (s_.ranks_per_node > 1) {
      auto t = Slowest(&RankTiming::node_s);
      node_bus_ = t ? std::optional(BusGbps(s_.bytes, s_.ranks_per_node, *t)) : std::nullopt;
      parts.push_back(t ? fmt::format("node all-reduce {} (bus {} GB/s)", FormatSeconds(*t), FormatGbps(*node_bus_))
                        : "node all-reduce failed");
    }
    if (s_.ranks() > 1) {
      auto t = Slowest(&RankTiming::world_s);
      parts.push_back(t ? fmt::format("world all-reduce {}", FormatSeconds(*t)) : "world all-reduce failed");
    }
  }

  void CheckRanks() {
    std::vector<int> missing;
    for (int64_t l = 0; l < s_.ranks_per_node; ++l) {
      const auto& r = g_.ranks[Rank(l)];
      if (!r) missing.push_back(static_cast<int>(Rank(l)));
      else if (!r->problem.empty())
        Add(fmt::format("{} {} (rank {}): {}", s_.gpu ? "GPU" : "local rank", l, Rank(l), r->problem));
    }
    if (!check_ && missing.size() == static_cast<size_t>(s_.ranks_per_node)) {
      Add(fmt::format("no rank of the node reported within {} ({} never joined, or failed before the checks)",
                      Wait(g_.check_wait_s), rendezvous::FormatRanks(missing)));
    } else if (!missing.empty()) {
      Add(fmt::format("{} did not report within {}", rendezvous::FormatRanks(missing), Wait(g_.check_wait_s)));
    } else if (!check_) {
      Add(fmt::format("local rank 0 (rank {}) did not report the node's checks", Rank(0)));
    }
  }

  void CheckPorts() {
    if (!check_) return;
    for (const std::string& p : check_->ports.problems) Add(p);
  }

  void CheckTimings() {
    std::vector<int> missing;
    for (int64_t l = 0; l < s_.ranks_per_node; ++l) {
      const auto& t = g_.timings[Rank(l)];
      if (!t) missing.push_back(static_cast<int>(Rank(l)));
      else if (!t->problem.empty()) Add(fmt::format("rank {}: {}", Rank(l), t->problem));
    }
    if (!missing.empty()) {
      Add(fmt::format("{} did not report the all-reduce times within {}", rendezvous::FormatRanks(missing),
                      Wait(g_.timing_wait_s)));
    }
    if (limits_.min_node_bus_gbps && node_bus_ && *node_bus_ < *limits_.min_node_bus_gbps) {
      Add(fmt::format("node all-reduce bus bandwidth {} GB/s over its {} ranks, expected at least {}",
                      FormatGbps(*node_bus_), s_.ranks_per_node, *limits_.min_node_bus_gbps));
    }
  }

  const Shape& s_;
  const Limits& limits_;
  const Gathered& g_;
  int64_t node_;
  const std::optional<NodeCheck>& check_;
  std::string label_;
  std::optional<double> node_bus_;
  std::vector<std::string> problems_;
};

auto Header(const Shape& s) -> std::string {
  return fmt::format("preflight of job `{}`: {} x {}, {}; all-reduce of {} (fp32), {} timed after {} warm-up", s.job,
                     Plural(s.nodes, "node"), Plural(s.ranks_per_node, "rank"),
                     s.gpu ? "GPUs over NCCL" : "CPUs over TCP", FormatBytes(s.bytes),
                     Plural(s.iterations, "iteration"), s.warmup);
}

// The world all-reduce's line; a bandwidth below the limit is a problem.
auto WorldLine(const Shape& s, const Limits& limits, const Gathered& g, std::vector<std::string>& problems)
    -> std::string {
  if (s.ranks() == 1) return "world all-reduce: one rank, nothing to measure";
  if (g.timings.empty()) return "world all-reduce not run: " + SkipReason(g);
  double slowest = 0;
  for (const auto& t : g.timings) {
    if (!t || !t->world_s) return "world all-reduce failed (the nodes' problems say where)";
    slowest = std::max(slowest, *t->world_s);
  }
  double bus = BusGbps(s.bytes, s.ranks(), slowest);
  if (limits.min_bus_gbps && bus < *limits.min_bus_gbps) {
    problems.push_back(fmt::format("all-reduce bus bandwidth {} GB/s across {} ({}, {} each), expected at least {}",
                                   FormatGbps(bus), Plural(s.nodes, "node"), Plural(s.ranks(), "rank"),
                                   FormatBytes(s.bytes), *limits.min_bus_gbps));
  }
  return fmt::format(
      "world all-reduce of {} over {} on {}: {} per iteration (slowest rank), bus bandwidth {} GB/s, algorithm "
      "bandwidth {} GB/s",
      FormatBytes(s.bytes), Plural(s.ranks(), "rank"), Plural(s.nodes, "node"), FormatSeconds(slowest), FormatGbps(bus),
      FormatGbps(AlgorithmGbps(s.bytes, slowest)));
}

auto Summary(const Shape& s, const Verdict& v) -> std::string {
  if (v.passed()) return fmt::format("preflight passed: {}, {}", Plural(s.nodes, "node"), Plural(s.ranks(), "rank"));
  return fmt::format("preflight failed: {}{}", Plural(static_cast<int64_t>(v.problems.size()), "problem"),
                     v.bad_nodes.empty() ? "" : " on " + Join(v.bad_nodes, ", "));
}

}  // namespace

auto SkipReason(const Gathered& g) -> std::string {
  bool missing = !g.unreadable.empty(), device = false, ports = false;
  for (const auto& r : g.ranks) missing |= !r, device |= r && !r->problem.empty();
  for (const auto& n : g.nodes) missing |= !n, ports |= n && !n->ports.problems.empty();
  if (missing) return "not every rank reported its checks";
  if (device && ports) return "device and port checks failed";
  if (device) return "a device check failed";
  if (ports) return "a port check failed";
  return "";
}

auto Judge(const Shape& shape, const Limits& limits, const Gathered& g) -> Verdict {
  Verdict v;
  v.lines.push_back(Header(shape));
  for (int64_t n = 0; n < shape.nodes; ++n) {
    NodeJudge node(shape, limits, g, n);
    v.lines.push_back(node.Line());
    v.problems.insert(v.problems.end(), node.problems().begin(), node.problems().end());
    if (!node.problems().empty()) v.bad_nodes.push_back(node.label());
  }
  v.lines.push_back(WorldLine(shape, limits, g, v.problems));
  v.problems.insert(v.problems.end(), g.unreadable.begin(), g.unreadable.end());
  v.summary = Summary(shape, v);
  return v;
}

}  // namespace avf::run::preflight
