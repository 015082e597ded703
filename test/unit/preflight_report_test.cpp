// What avf-run preflight's ranks report and what rank 0 concludes
// (runtime/run/preflight_report.h): store values, the bandwidth arithmetic
// and the verdict, whose problems name the node.
#include <gtest/gtest.h>

#include "run/preflight_report.h"

namespace avf::run::preflight {
namespace {

TEST(PreflightValues, RoundTripAndStayOnOneLine) {
  RankCheck r{.rank = 7, .device = "NVIDIA H100 80GB HBM3 (79.1 GiB)", .problem = "two\nlines"};
  auto rank = DecodeRankCheck(Encode(r));
  ASSERT_TRUE(static_cast<bool>(rank));
  EXPECT_EQ(rank->rank, 7);
  EXPECT_EQ(rank->device, r.device);
  EXPECT_EQ(rank->problem, "two lines");

  NodeCheck n{.node = 3, .host = "gpu-node-17"};
  n.ports = {.checked = true, .note = "NCCL_IB_HCA==mlx5_0"};
  n.ports.ports.push_back({.device = "mlx5_0", .port = 1, .state = "DOWN", .phys_state = "Polling", .rate = ""});
  n.ports.problems.push_back("port mlx5_0:1 is DOWN (physical state Polling)");
  auto node = DecodeNodeCheck(Encode(n));
  ASSERT_TRUE(static_cast<bool>(node));
  EXPECT_EQ(node->node, 3);
  EXPECT_EQ(node->host, "gpu-node-17");
  EXPECT_TRUE(node->ports.checked);
  EXPECT_EQ(node->ports.note, n.ports.note);
  ASSERT_EQ(node->ports.ports.size(), 1u);
  EXPECT_EQ(node->ports.ports[0].name(), "mlx5_0:1");
  EXPECT_EQ(node->ports.ports[0].phys_state, "Polling");
  EXPECT_EQ(node->ports.problems, n.ports.problems);

  RankTiming t{.rank = 2, .node_s = 0.00125, .world_s = std::nullopt, .problem = ""};
  auto timing = DecodeRankTiming(Encode(t));
  ASSERT_TRUE(static_cast<bool>(timing));
  EXPECT_EQ(timing->node_s, 0.00125);
  EXPECT_FALSE(timing->world_s);
}

TEST(PreflightValues, AReportWithoutItsRankIsRefused) {
  EXPECT_FALSE(static_cast<bool>(DecodeRankCheck("device=cpu\n")));
  EXPECT_FALSE(static_cast<bool>(DecodeNodeCheck("host=a\n")));
  EXPECT_FALSE(static_cast<bool>(DecodeRankTiming("rank=x\n")));
  EXPECT_FALSE(static_cast<bool>(DecodeNodeCheck("node=1\nport=mlx5_0\t1\n")));
}

TEST(PreflightBandwidth, BusBandwidthIsTwoNMinusOneOverNOfTheAlgorithmBandwidth) {
  constexpr uint64_t kBytes = uint64_t{256} << 20;
  EXPECT_DOUBLE_EQ(AlgorithmGbps(kBytes, 0.01), 26.8435456);
  EXPECT_DOUBLE_EQ(BusGbps(kBytes, 8, 0.01), 2.0 * 7 / 8 * 26.8435456);
  EXPECT_DOUBLE_EQ(BusGbps(kBytes, 2, 0.01), 26.8435456);
  EXPECT_EQ(BusGbps(kBytes, 1, 0.01), 0);
  EXPECT_EQ(AlgorithmGbps(kBytes, 0), 0);
}

TEST(PreflightBandwidth, Spellings) {
  EXPECT_EQ(FormatGbps(447.3), "447");
  EXPECT_EQ(FormatGbps(12.34), "12.3");
  EXPECT_EQ(FormatGbps(0.812), "0.81");
  EXPECT_EQ(FormatSeconds(0.001234), "1.234 ms");
  EXPECT_EQ(FormatSeconds(0.0567), "56.7 ms");
  EXPECT_EQ(FormatSeconds(2.345), "2.35 s");
  EXPECT_EQ(FormatBytes(uint64_t{256} << 20), "256 MiB");
  EXPECT_EQ(FormatBytes(uint64_t{1} << 30), "1 GiB");
  EXPECT_EQ(FormatBytes(1000), "1000 bytes");
}

// Two nodes of two GPUs that passed every check and measured the given times.
auto Healthy(double node_s = 0.001, double world_s = 0.004) -> Gathered {
  Gathered g{.nodes = std::vector<std::optional<NodeCheck>>(2),
             .ranks = std::vector<std::optional<RankCheck>>(4),
             .timings = std::vector<std::optional<RankTiming>>(4),
             .check_wait_s = 300,
             .timing_wait_s = 360};
  for (int64_t n = 0; n < 2; ++n) {
    NodeCheck c{.node = n, .host = n == 0 ? "gpu-node-3" : "gpu-node-17"};
    c.ports = {.checked = true, .note = "NCCL_IB_HCA==mlx5_0"};
    c.ports.ports.push_back({.device = "mlx5_0", .port = 1, .state = "ACTIVE", .rate = "400 Gb/sec"});
    g.nodes[n] = c;
  }
  for (int64_t r = 0; r < 4; ++r) {
    g.ranks[r] = RankCheck{.rank = r, .device = "NVIDIA H100 80GB HBM3 (79.1 GiB)"};
    g.timings[r] = RankTiming{.rank = r, .node_s = node_s, .world_s = world_s};
  }
  return g;
}

const Shape kShape{.job = "pretrain",
                   .nodes = 2,
                   .ranks_per_node = 2,
                   .gpu = true,
                   .bytes = uint64_t{256} << 20,
                   .iterations = 20,
                   .warmup = 5};

TEST(PreflightVerdict, AHealthyJobPassesWithOneLinePerNode) {
  Verdict v = Judge(kShape, {}, Healthy());
  EXPECT_TRUE(v.passed());
  std::vector<std::string> expected = {
      "preflight of job `pretrain`: 2 nodes x 2 ranks, GPUs over NCCL; all-reduce of 256 MiB (fp32), 20 iterations "
      "timed after 5 warm-up",
      "node 0 (gpu-node-3) ok: gpu 0-1 NVIDIA H100 80GB HBM3 (79.1 GiB); ib ports mlx5_0:1 ACTIVE 400 Gb/sec; node "
      "all-reduce 1.000 ms (bus 268 GB/s); world all-reduce 4.000 ms",
      "node 1 (gpu-node-17) ok: gpu 0-1 NVIDIA H100 80GB HBM3 (79.1 GiB); ib ports mlx5_0:1 ACTIVE 400 Gb/sec; node "
      "all-reduce 1.000 ms (bus 268 GB/s); world all-reduce 4.000 ms",
      "world all-reduce of 256 MiB over 4 ranks on 2 nodes: 4.000 ms per iteration (slowest rank), bus bandwidth 101 "
      "GB/s, algorithm bandwidth 67.1 GB/s"};
  EXPECT_EQ(v.lines, expected);
  EXPECT_EQ(v.summary, "preflight passed: 2 nodes, 4 ranks");
  EXPECT_EQ(SkipReason(Healthy()), "");
}

TEST(PreflightVerdict, ADownPortNamesTheNodeAndItsHost) {
  Gathered g = Healthy();
  g.timings.clear();
  g.nodes[1]->ports.ports[0].state = "DOWN";
  g.nodes[1]->ports.problems = {"port mlx5_0:1 is DOWN (physical state Polling)"};
  EXPECT_EQ(SkipReason(g), "a port check failed");
  Verdict v = Judge(kShape, {}, g);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.problems,
            std::vector<std::string>{"node 1 (gpu-node-17): port mlx5_0:1 is DOWN (physical state Polling)"});
  EXPECT_EQ(v.lines[2],
            "node 1 (gpu-node-17) FAILED: gpu 0-1 NVIDIA H100 80GB HBM3 (79.1 GiB); ib ports mlx5_0:1 DOWN");
  EXPECT_EQ(v.lines[3], "world all-reduce not run: a port check failed");
  EXPECT_EQ(v.summary, "preflight failed: 1 problem on node 1 (gpu-node-17)");
}

TEST(PreflightVerdict, AFailedGpuIsNamedByItsLocalAndGlobalRank) {
  Gathered g = Healthy();
  g.timings.clear();
  g.ranks[3]->problem = "CUDA device 1: cudaMalloc of 256 MiB: cudaErrorMemoryAllocation: out of memory";
  Verdict v = Judge(kShape, {}, g);
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_EQ(v.problems[0],
            "node 1 (gpu-node-17): GPU 1 (rank 3): CUDA device 1: cudaMalloc of 256 MiB: "
            "cudaErrorMemoryAllocation: out of memory");
  EXPECT_NE(v.lines[2].find("gpu 0 NVIDIA H100 80GB HBM3 (79.1 GiB), gpu 1 FAILED"), std::string::npos);
}

TEST(PreflightVerdict, ANodeThatNeverJoinedIsNamedByItsRanks) {
  Gathered g = Healthy();
  g.timings.clear();
  g.nodes[1].reset();
  g.ranks[2].reset();
  g.ranks[3].reset();
  EXPECT_EQ(SkipReason(g), "not every rank reported its checks");
  Verdict v = Judge(kShape, {}, g);
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_EQ(v.problems[0],
            "node 1: no rank of the node reported within 300 s (ranks 2-3 never joined, or failed before the checks)");
  EXPECT_EQ(v.lines[2], "node 1 FAILED: gpu 0-1 missing; ib ports unknown");
  g.ranks[2] = RankCheck{.rank = 2, .device = "x"};
  g.nodes[1] = NodeCheck{.node = 1, .host = "gpu-node-17"};
  EXPECT_EQ(Judge(kShape, {}, g).problems[0], "node 1 (gpu-node-17): rank 3 did not report within 300 s");
}

TEST(PreflightVerdict, BandwidthBelowTheLimitNamesTheBandwidthAndTheNodeCount) {
  Verdict v = Judge(kShape, {.min_bus_gbps = 400}, Healthy());
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_EQ(v.problems[0],
            "all-reduce bus bandwidth 101 GB/s across 2 nodes (4 ranks, 256 MiB each), expected at least 400");
  EXPECT_EQ(v.summary, "preflight failed: 1 problem");
  EXPECT_TRUE(Judge(kShape, {.min_bus_gbps = 100}, Healthy()).passed());
}

TEST(PreflightVerdict, TheSlowestRankSetsTheTimeAndASlowNodeIsNamed) {
  Gathered g = Healthy();
  g.timings[3]->node_s = 0.01;
  g.timings[3]->world_s = 0.008;
  Verdict v = Judge(kShape, {.min_node_bus_gbps = 100}, g);
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_EQ(v.problems[0],
            "node 1 (gpu-node-17): node all-reduce bus bandwidth 26.8 GB/s over its 2 ranks, expected at least 100");
  EXPECT_NE(v.lines[3].find("8.000 ms per iteration (slowest rank), bus bandwidth 50.3 GB/s"), std::string::npos);
}

TEST(PreflightVerdict, AFailedOrMissingTimingIsNamed) {
  Gathered g = Healthy();
  g.timings[1]->world_s.reset();
  g.timings[1]->problem = "the world all-reduce failed: rank 2 closed its connection during AllReduce";
  g.timings[2].reset();
  Verdict v = Judge(kShape, {.min_bus_gbps = 1}, g);
  ASSERT_EQ(v.problems.size(), 2u);
  EXPECT_EQ(v.problems[0],
            "node 0 (gpu-node-3): rank 1: the world all-reduce failed: rank 2 closed its connection during AllReduce");
  EXPECT_EQ(v.problems[1], "node 1 (gpu-node-17): rank 2 did not report the all-reduce times within 360 s");
  EXPECT_EQ(v.lines[3], "world all-reduce failed (the nodes' problems say where)");
  EXPECT_EQ(v.summary, "preflight failed: 2 problems on node 0 (gpu-node-3), node 1 (gpu-node-17)");
}

TEST(PreflightVerdict, CpuRanksAndASingleRank) {
  Shape cpu = kShape;
  cpu.gpu = false;
  cpu.nodes = 1;
  cpu.ranks_per_node = 1;
  Gathered g{.nodes = {NodeCheck{.node = 0, .host = "laptop", .ports = {.note = "the plan names no network"}}},
             .ranks = {RankCheck{.rank = 0, .device = "cpu"}},
             .timings = {RankTiming{.rank = 0}}};
  Verdict v = Judge(cpu, {.min_bus_gbps = 1000}, g);
  EXPECT_TRUE(v.passed());
  EXPECT_EQ(v.lines[1], "node 0 (laptop) ok: cpu (no device check); ib ports not checked (the plan names no network)");
  EXPECT_EQ(v.lines[2], "world all-reduce: one rank, nothing to measure");
}

TEST(PreflightVerdict, TheOtherRanksReadTheProblemsBack) {
  Gathered g = Healthy();
  g.timings.clear();
  g.ranks[0]->problem = "x";
  Verdict v = Judge(kShape, {}, g);
  EXPECT_EQ(DecodeProblems(EncodeProblems(v)), v.problems);
  EXPECT_TRUE(DecodeProblems(EncodeProblems(Judge(kShape, {}, Healthy()))).empty());
}

}  // namespace
}  // namespace avf::run::preflight
