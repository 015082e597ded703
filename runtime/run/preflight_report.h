// What the ranks of `avf-run preflight` report to rank 0 through the
// rendezvous store, and what rank 0 makes of it: the bandwidth arithmetic,
// one line per node, and the verdict, whose problems each name a node (its
// rank and host) or the job's all-reduce bandwidth. Nothing here talks to
// the store or a device (preflight.h does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/Support/Error.h>

#include "run/ib_ports.h"

namespace avf::run::preflight {

// Every rank, after checking its device.
struct RankCheck {
  int64_t rank = 0;
  std::string device;   // "cpu", or the GPU's name and memory
  std::string problem;  // why the device failed; "" when it works
};

// Every node's local rank 0.
struct NodeCheck {
  int64_t node = 0;
  std::string host;  // $AVF_NODE_NAME, else the host name
  PortCheck ports;
};

// Every rank, after the all-reduces: seconds per all-reduce, the mean of the
// timed iterations; nullopt where the rank ran none (one rank per node, a
// world of one, a failure).
struct RankTiming {
  int64_t rank = 0;
  std::optional<double> node_s, world_s;
  std::string problem;  // a collective that failed or summed wrong
};

// Store values: one `key=value` line per field (newlines in values become
// spaces). Decoding refuses a value without its rank or node.
auto Encode(const RankCheck& c) -> std::string;
auto Encode(const NodeCheck& c) -> std::string;
auto Encode(const RankTiming& t) -> std::string;
auto DecodeRankCheck(std::string_view text) -> llvm::Expected<RankCheck>;
auto DecodeNodeCheck(std::string_view text) -> llvm::Expected<NodeCheck>;
auto DecodeRankTiming(std::string_view text) -> llvm::Expected<RankTiming>;

// GB/s (10^9 bytes per second) of an all-reduce of `bytes` per rank taking
// `seconds`: the algorithm bandwidth bytes / seconds, and the bus bandwidth
// 2 (n - 1) / n x bytes / seconds, what each rank's link carries in a ring
// all-reduce over n ranks, comparable across rank counts (0 for one rank).
auto AlgorithmGbps(uint64_t bytes, double seconds) -> double;
auto BusGbps(uint64_t bytes, int64_t ranks, double seconds) -> double;

// "12.3", "0.81", "447": three significant digits at most, no exponent.
auto FormatGbps(double gbps) -> std::string;
// "1.234 ms", "56.7 ms", "2.35 s".
auto FormatSeconds(double seconds) -> std::string;
// "256 MiB", "4 MiB", "1000 bytes".
auto FormatBytes(uint64_t bytes) -> std::string;

struct Shape {
  std::string job;
  int64_t nodes = 1, ranks_per_node = 1;
  bool gpu = false;
  uint64_t bytes = 0;
  int64_t iterations = 0, warmup = 0;
  auto ranks() const -> int64_t { return nodes * ranks_per_node; }
};

struct Limits {
  std::optional<double> min_bus_gbps;       // the world all-reduce
  std::optional<double> min_node_bus_gbps;  // each node's all-reduce among its ranks
};

// What rank 0 gathered: indexed by node and by global rank; nullopt where
// nothing came within the wait.
struct Gathered {
  std::vector<std::optional<NodeCheck>> nodes;
  std::vector<std::optional<RankCheck>> ranks;
  std::vector<std::optional<RankTiming>> timings;  // empty when the all-reduces did not run
  std::vector<std::string> unreadable;             // reports that did not decode, as problems
  double check_wait_s = 0, timing_wait_s = 0;      // how long rank 0 waited, for messages
};

struct Verdict {
  std::vector<std::string> lines;      // the header, one line per node, the world line
  std::vector<std::string> problems;   // by node, then the job's
  std::vector<std::string> bad_nodes;  // "node 3 (gpu-node-17)", ascending
  std::string summary;                 // "preflight passed: ..." or "preflight failed: ..."
  auto passed() const -> bool { return problems.empty(); }
};

// Whether the all-reduces should run: every rank and node reported, and no
// device or port check failed. "" when they should; else why not.
auto SkipReason(const Gathered& g) -> std::string;

auto Judge(const Shape& shape, const Limits& limits, const Gathered& g) -> Verdict;

// The verdict as the other ranks read it from the store, and back.
auto EncodeProblems(const Verdict& v) -> std::string;
auto DecodeProblems(std::string_view text) -> std::vector<std::string>;

}  // namespace avf::run::preflight
