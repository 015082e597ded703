// Tests for runtime/plan/identity.h: the rank environment of each target as
// docs/deploy.md writes it (PyTorchJob, JobSet, Slurm), torchrun's, flags,
// the one-rank default, strict integers, and every cross-check against the
// plan, each with the message that names both values and their sources.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/identity.h"
#include "runplan_test_util.h"

namespace avf::runtime {
namespace {

using testing::Fixture;
using ::testing::HasSubstr;
using testing::MakePlan;
using testing::MustParse;
using testing::Shape;

// 32 ranks on 4 nodes of 8 GPUs.
auto Hgx() -> const RunPlan& {
  static const RunPlan plan = MustParse(Fixture("hgx_h100_platform.json"));
  return plan;
}

auto Tiny() -> const RunPlan& {
  static const RunPlan plan = MustParse(Fixture("gpt2_tiny_local.json"));
  return plan;
}

// What the JobSet pod template sets for pod `node` (deploy.md, Rank environment).
auto JobSetEnv(const std::string& node) -> Environment {
  return {{"MASTER_ADDR", "llama3-8b-platform-node-0-0.llama3-8b-platform"},
          {"MASTER_PORT", "29500"},
          {"PET_NNODES", "4"},
          {"PET_NPROC_PER_NODE", "8"},
          {"PET_NODE_RANK", node}};
}

// What the training operator sets for a PyTorchJob pod: RANK is the pod's.
auto PyTorchJobEnv(const std::string& pod) -> Environment {
  return {{"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"},    {"WORLD_SIZE", "32"}, {"RANK", pod},
          {"PET_NODE_RANK", pod},          {"PET_NPROC_PER_NODE", "8"}, {"PET_NNODES", "4"}};
}

auto Resolve(const IdentityFlags& flags, const Environment& env, const RunPlan& plan) -> RankIdentity {
  llvm::Expected<RankIdentity> id = ResolveIdentity(flags, env, plan);
  if (!id) {
    ADD_FAILURE() << llvm::toString(id.takeError());
    return {};
  }
  return *id;
}

auto Failure(const IdentityFlags& flags, const Environment& env, const RunPlan& plan) -> std::string {
  llvm::Expected<RankIdentity> id = ResolveIdentity(flags, env, plan);
  if (id) {
    ADD_FAILURE() << "resolved to rank " << id->rank;
    return "";
  }
  return llvm::toString(id.takeError());
}

auto NodeFailure(const IdentityFlags& flags, const Environment& env, const RunPlan& plan) -> std::string {
  llvm::Expected<NodeIdentity> id = ResolveNode(flags, env, plan);
  if (id) {
    ADD_FAILURE() << "resolved to node " << id->node_rank;
    return "";
  }
  return llvm::toString(id.takeError());
}

auto With(Environment env, const std::string& name, const std::string& value) -> Environment {
  env[name] = value;
  return env;
}

auto Without(Environment env, const std::string& name) -> Environment {
  env.erase(name);
  return env;
}

TEST(RankIdentity, SingleRankDefault) {
  RankIdentity id = Resolve({}, {}, Tiny());
  EXPECT_EQ(id.rank, 0);
  EXPECT_EQ(id.world_size, 1);
  EXPECT_EQ(id.local_rank, 0);
  EXPECT_EQ(id.node_rank, 0);
  EXPECT_EQ(id.nproc_per_node, 1);
  EXPECT_EQ(id.nnodes, 1);
  EXPECT_EQ(id.master_addr, "127.0.0.1");
  EXPECT_EQ(id.master_port, 29500);
  EXPECT_EQ(id.convention, IdentityConvention::SingleRank);
  // MASTER_* alone do not name a rank; they are still used.
  RankIdentity with_master = Resolve({}, {{"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "1234"}}, Tiny());
  EXPECT_EQ(with_master.master_addr, "10.0.0.5");
  EXPECT_EQ(with_master.master_port, 1234);
  EXPECT_EQ(with_master.convention, IdentityConvention::SingleRank);
}

TEST(RankIdentity, NothingSetForAManyRankPlan) {
  EXPECT_EQ(Failure({}, {}, Hgx()),
            "no rank identity: neither flags (--rank, --node-rank, ...) nor the environment (PET_NODE_RANK, "
            "PET_NPROC_PER_NODE, PET_NNODES as the manifests set them, or torchrun's RANK, WORLD_SIZE, LOCAL_RANK) "
            "say which rank this is, and plan.json has 32 ranks");
}

TEST(RankIdentity, JobSetAndSlurmNode) {
  // JobSet and Slurm set the same variables; Slurm's PET_NODE_RANK is $SLURM_NODEID.
  llvm::Expected<NodeIdentity> node = ResolveNode({}, JobSetEnv("3"), Hgx());
  ASSERT_TRUE(static_cast<bool>(node)) << llvm::toString(node.takeError());
  EXPECT_EQ(node->node_rank, 3);
  EXPECT_EQ(node->nproc_per_node, 8);
  EXPECT_EQ(node->nnodes, 4);
  EXPECT_EQ(node->world_size, 32);
  EXPECT_EQ(node->master_addr, "llama3-8b-platform-node-0-0.llama3-8b-platform");
  EXPECT_EQ(node->master_port, 29500);
  EXPECT_EQ(node->convention, IdentityConvention::Pet);
  EXPECT_EQ(node->origin.node_rank, "PET_NODE_RANK=3 (environment)");
  EXPECT_EQ(node->origin.world_size, "PET_NNODES=4 (environment) x PET_NPROC_PER_NODE=8 (environment)");
  std::vector<int64_t> ranks;
  for (int64_t r : RanksOfNode(node->node_rank, node->nproc_per_node)) ranks.push_back(r);
  EXPECT_EQ(ranks, std::vector<int64_t>({24, 25, 26, 27, 28, 29, 30, 31}));
}

TEST(RankIdentity, PetProcessNeedsALocalRank) {
  EXPECT_EQ(Failure({}, JobSetEnv("1"), Hgx()),
            "the local rank is not set: PET_NPROC_PER_NODE=8 (environment) starts 8 processes on node 1; pass "
            "--local-rank or set LOCAL_RANK (a per-node avf-run starts RanksOfNode with --local-rank each)");
  IdentityFlags flags;
  flags.local_rank = "5";
  RankIdentity id = Resolve(flags, JobSetEnv("2"), Hgx());
  EXPECT_EQ(id.rank, 21);
  EXPECT_EQ(id.local_rank, 5);
  EXPECT_EQ(id.origin.rank,
            "PET_NODE_RANK=2 (environment) x PET_NPROC_PER_NODE=8 (environment) + --local-rank=5 (flag)");
  RankIdentity env_local = Resolve({}, With(JobSetEnv("2"), "LOCAL_RANK", "7"), Hgx());
  EXPECT_EQ(env_local.rank, 23);
  EXPECT_EQ(env_local.origin.local_rank, "LOCAL_RANK=7 (environment)");
}

TEST(RankIdentity, PyTorchJobRankIsThePodsRank) {
  // Worker 1 is pod 2: RANK=2 must not be taken as process rank 2.
  RankIdentity id = Resolve({}, With(PyTorchJobEnv("2"), "LOCAL_RANK", "5"), Hgx());
  EXPECT_EQ(id.rank, 21);
  EXPECT_EQ(id.node_rank, 2);
  EXPECT_EQ(id.world_size, 32);
  EXPECT_EQ(id.origin.world_size, "WORLD_SIZE=32 (environment)");
  EXPECT_EQ(id.master_addr, "job-master-0");
  EXPECT_EQ(id.master_port, 23456);
  EXPECT_EQ(id.convention, IdentityConvention::Pet);
  llvm::Expected<NodeIdentity> master = ResolveNode({}, PyTorchJobEnv("0"), Hgx());
  ASSERT_TRUE(static_cast<bool>(master)) << llvm::toString(master.takeError());
  EXPECT_EQ(master->node_rank, 0);
  // torchrun inside a PyTorchJob pod: children inherit PET_*, torchrun sets
  // RANK to the process rank. Still resolved from PET_* and LOCAL_RANK.
  Environment child = PyTorchJobEnv("3");
  child["RANK"] = "29";
  child["LOCAL_RANK"] = "5";
  child["GROUP_RANK"] = "3";
  child["LOCAL_WORLD_SIZE"] = "8";
  EXPECT_EQ(Resolve({}, child, Hgx()).rank, 29);
}

TEST(RankIdentity, Torchrun) {
  Environment env{
      {"RANK", "13"}, {"WORLD_SIZE", "32"}, {"LOCAL_RANK", "5"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29400"}};
  RankIdentity id = Resolve({}, env, Hgx());
  EXPECT_EQ(id.rank, 13);
  EXPECT_EQ(id.local_rank, 5);
  EXPECT_EQ(id.node_rank, 1);
  EXPECT_EQ(id.nproc_per_node, 8);
  EXPECT_EQ(id.origin.nproc_per_node, "plan.json (its ranks per node)");
  EXPECT_EQ(id.convention, IdentityConvention::Torchrun);
  EXPECT_EQ(id.master_port, 29400);
  // LOCAL_RANK may be left out: it follows from RANK.
  EXPECT_EQ(Resolve({}, Without(env, "LOCAL_RANK"), Hgx()).local_rank, 5);
  // torchrun's GROUP_RANK and LOCAL_WORLD_SIZE, when set, must agree.
  Environment full = env;
  full["GROUP_RANK"] = "1";
  full["LOCAL_WORLD_SIZE"] = "8";
  EXPECT_EQ(Resolve({}, full, Hgx()).rank, 13);
  EXPECT_EQ(Failure({}, With(full, "GROUP_RANK", "2"), Hgx()),
            "RANK=13 (environment) is on node 1 with LOCAL_WORLD_SIZE=8 (environment), but GROUP_RANK=2 "
            "(environment)");
  EXPECT_EQ(Failure({}, With(env, "LOCAL_RANK", "4"), Hgx()),
            "RANK=13 (environment) is local rank 5 of its node with plan.json (its ranks per node), but LOCAL_RANK=4 "
            "(environment)");
  EXPECT_EQ(Failure({}, With(full, "LOCAL_WORLD_SIZE", "4"), Hgx()),
            "LOCAL_WORLD_SIZE=4 (environment) but plan.json runs 8 ranks per node (hardware.gpus_per_node = 8)");
  EXPECT_EQ(Failure({}, Without(Without(env, "RANK"), "LOCAL_RANK"), Hgx()),
            "the node rank is not set: pass --node-rank or --rank, or set PET_NODE_RANK (or torchrun's RANK); "
            "plan.json has 32 ranks on 4 nodes");
}

TEST(RankIdentity, FlagsOverrideTheEnvironment) {
  IdentityFlags flags;
  flags.rank = "3";
  flags.world_size = "32";
  flags.local_rank = "3";
  flags.node_rank = "0";
  flags.nproc_per_node = "8";
  flags.master_addr = "10.1.2.3";
  flags.master_port = "40000";
  Environment env{{"RANK", "7"},       {"WORLD_SIZE", "16"},      {"LOCAL_RANK", "7"},
                  {"GROUP_RANK", "2"}, {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "stale"},
                  {"MASTER_PORT", "1"}};
  RankIdentity id = Resolve(flags, env, Hgx());
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.world_size, 32);
  EXPECT_EQ(id.master_addr, "10.1.2.3");
  EXPECT_EQ(id.master_port, 40000);
  EXPECT_EQ(id.origin.rank, "--rank=3 (flag)");
  EXPECT_EQ(id.origin.master_addr, "--master-addr=10.1.2.3 (flag)");
  // Same over PET_*: the flags win value by value.
  IdentityFlags node_flag;
  node_flag.node_rank = "1";
  node_flag.local_rank = "0";
  EXPECT_EQ(Resolve(node_flag, JobSetEnv("3"), Hgx()).rank, 8);
}

TEST(RankIdentity, FlagsAlone) {
  IdentityFlags flags;
  flags.rank = "9";
  flags.master_addr = "head";
  RankIdentity id = Resolve(flags, {}, Hgx());
  EXPECT_EQ(id.rank, 9);
  EXPECT_EQ(id.node_rank, 1);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 32);
  EXPECT_EQ(id.origin.world_size, "plan.json");
  EXPECT_EQ(id.convention, IdentityConvention::Flags);
  IdentityFlags no_master;
  no_master.rank = "9";
  EXPECT_EQ(Failure(no_master, {}, Hgx()),
            "MASTER_ADDR is not set and plan.json spans 4 nodes: pass --master-addr or set MASTER_ADDR to rank 0's "
            "host");
  // One node: the address defaults to the loopback.
  IdentityFlags one_node;
  one_node.local_rank = "3";
  RunPlan node8 = MakePlan(Shape{8, 1, 1, 8});
  RankIdentity local = Resolve(one_node, {}, node8);
  EXPECT_EQ(local.rank, 3);
  EXPECT_EQ(local.master_addr, "127.0.0.1");
  EXPECT_EQ(local.origin.node_rank, "default (plan.json uses one node)");
}

TEST(RankIdentity, WorldSizeMismatches) {
  EXPECT_EQ(Failure({}, With(PyTorchJobEnv("0"), "WORLD_SIZE", "16"), Hgx()),
            "WORLD_SIZE=16 (environment) but plan.json has 32 ranks\n"
            "WORLD_SIZE=16 (environment) but PET_NNODES=4 (environment) x PET_NPROC_PER_NODE=8 (environment) = 32 "
            "processes");
  IdentityFlags flags;
  flags.world_size = "64";
  flags.rank = "0";
  EXPECT_THAT(Failure(flags, {{"MASTER_ADDR", "h"}}, Hgx()),
              HasSubstr("--world-size=64 (flag) but plan.json has 32 ranks"));
  EXPECT_EQ(Failure({}, {{"RANK", "0"}, {"WORLD_SIZE", "16"}, {"MASTER_ADDR", "h"}}, Hgx()),
            "WORLD_SIZE=16 (environment) but plan.json has 32 ranks");
}

TEST(RankIdentity, NodeCountAndProcessesPerNode) {
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "PET_NNODES", "2"), Hgx()),
            "PET_NNODES=2 (environment) but plan.json uses 4 nodes");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "PET_NPROC_PER_NODE", "4"), Hgx()),
            "PET_NPROC_PER_NODE=4 (environment) but plan.json runs 8 ranks per node (hardware.gpus_per_node = 8)");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "PET_NPROC_PER_NODE", "0"), Hgx()),
            "PET_NPROC_PER_NODE=0 (environment) must be at least 1");
  // A job smaller than its node: nprocPerNode is the job's GPU count.
  EXPECT_EQ(NodeFailure({}, {{"PET_NODE_RANK", "0"}, {"PET_NPROC_PER_NODE", "8"}, {"PET_NNODES", "1"}}, Tiny()),
            "PET_NPROC_PER_NODE=8 (environment) but plan.json runs 1 ranks per node (hardware.gpus_per_node = 8)");
  EXPECT_EQ(Resolve({}, {{"PET_NODE_RANK", "0"}, {"PET_NPROC_PER_NODE", "1"}, {"PET_NNODES", "1"}}, Tiny()).rank, 0);
}

TEST(RankIdentity, RanksOutsideThePlan) {
  EXPECT_EQ(NodeFailure({}, JobSetEnv("4"), Hgx()), "PET_NODE_RANK=4 (environment) but plan.json uses nodes 0..3");
  EXPECT_EQ(Failure({}, With(JobSetEnv("1"), "LOCAL_RANK", "8"), Hgx()),
            "LOCAL_RANK=8 (environment) but PET_NPROC_PER_NODE=8 (environment) gives local ranks 0..7");
  EXPECT_EQ(Failure({}, {{"RANK", "32"}, {"WORLD_SIZE", "32"}, {"MASTER_ADDR", "h"}}, Hgx()),
            "RANK=32 (environment) but plan.json has ranks 0..31");
  IdentityFlags flags;
  flags.rank = "3";
  EXPECT_EQ(Failure(flags, JobSetEnv("1"), Hgx()),
            "--rank=3 (flag) is on node 0 with PET_NPROC_PER_NODE=8 (environment), but PET_NODE_RANK=1 (environment)");
}

TEST(RankIdentity, NodeRanksMustBeOnThatNodeInThePlan) {
  // 12 ranks on nodes of 8: node 1 would run ranks 8..15 (the manifests refuse
  // such a job; a plan may still describe it).
  RunPlan partial = MakePlan(Shape{1, 12, 1, 8});
  Environment env{{"PET_NODE_RANK", "1"}, {"PET_NPROC_PER_NODE", "8"}, {"MASTER_ADDR", "h"}};
  EXPECT_EQ(NodeFailure({}, env, partial),
            "PET_NODE_RANK=1 (environment) with PET_NPROC_PER_NODE=8 (environment) runs ranks 8..15, but plan.json "
            "has ranks 0..11");
  RunPlan moved = Hgx();
  moved.ranks[26].node = 2;
  moved.ranks[26].gpu = 7;
  EXPECT_EQ(NodeFailure({}, JobSetEnv("3"), moved),
            "PET_NODE_RANK=3 (environment) runs rank 26 as local rank 2, but plan.json puts rank 26 on node 2, GPU 7 "
            "(ranks[26])");
}

TEST(RankIdentity, StrictIntegers) {
  for (const char* bad : {"", " 1", "1 ", "+1", "-1", "1x", "0x10", "1.0", "1e3", "one", "٣"}) {
    EXPECT_THAT(NodeFailure({}, With(JobSetEnv("0"), "PET_NODE_RANK", bad), Hgx()),
                HasSubstr("(environment) is not a non-negative decimal integer"))
        << "'" << bad << "'";
  }
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "PET_NODE_RANK", "1x"), Hgx()),
            "PET_NODE_RANK=1x (environment) is not a non-negative decimal integer");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "PET_NODE_RANK", " 1"), Hgx()),
            "PET_NODE_RANK=\" 1\" (environment) is not a non-negative decimal integer");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "PET_NODE_RANK", "99999999999999999999"), Hgx()),
            "PET_NODE_RANK=99999999999999999999 (environment) is too large");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "PET_NODE_RANK", "9223372036854775807"), Hgx()),
            "PET_NODE_RANK=9223372036854775807 (environment) but plan.json uses nodes 0..3");
  IdentityFlags flags;
  flags.rank = "-0";
  EXPECT_EQ(Failure(flags, {}, Hgx()), "--rank=-0 (flag) is not a non-negative decimal integer");
  EXPECT_EQ(Resolve({}, With(JobSetEnv("003"), "LOCAL_RANK", "07"), Hgx()).rank, 31);  // leading zeros are digits
  // All parse errors at once.
  Environment env = JobSetEnv("a");
  env["PET_NNODES"] = "b";
  EXPECT_EQ(NodeFailure({}, env, Hgx()),
            "PET_NODE_RANK=a (environment) is not a non-negative decimal integer\n"
            "PET_NNODES=b (environment) is not a non-negative decimal integer");
}

TEST(RankIdentity, MasterAddressAndPort) {
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "MASTER_PORT", "70000"), Hgx()),
            "MASTER_PORT=70000 (environment) is not a TCP port (1..65535)");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "MASTER_PORT", "0"), Hgx()),
            "MASTER_PORT=0 (environment) is not a TCP port (1..65535)");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "MASTER_PORT", "29500/tcp"), Hgx()),
            "MASTER_PORT=29500/tcp (environment) is not a non-negative decimal integer");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "MASTER_ADDR", ""), Hgx()),
            "MASTER_ADDR=\"\" (environment) is not a host name or address");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "MASTER_ADDR", "a b"), Hgx()),
            "MASTER_ADDR=\"a b\" (environment) is not a host name or address");
  EXPECT_EQ(NodeFailure({}, With(JobSetEnv("0"), "MASTER_ADDR", "a\nb"), Hgx()),
            "MASTER_ADDR=\"a\\x0ab\" (environment) is not a host name or address");
  EXPECT_EQ(NodeFailure({}, Without(JobSetEnv("0"), "MASTER_ADDR"), Hgx()),
            "MASTER_ADDR is not set and plan.json spans 4 nodes: pass --master-addr or set MASTER_ADDR to rank 0's "
            "host");
  std::string fqdn = "llama3-8b-platform-node-0-0.llama3-8b-platform.ml-training.svc.cluster.local";
  llvm::Expected<NodeIdentity> long_name = ResolveNode({}, With(JobSetEnv("0"), "MASTER_ADDR", fqdn), Hgx());
  ASSERT_TRUE(static_cast<bool>(long_name)) << llvm::toString(long_name.takeError());
  EXPECT_EQ(long_name->master_addr, fqdn);
  llvm::Expected<NodeIdentity> v6 = ResolveNode({}, With(JobSetEnv("0"), "MASTER_ADDR", "[fd00::1]"), Hgx());
  ASSERT_TRUE(static_cast<bool>(v6)) << llvm::toString(v6.takeError());
  EXPECT_EQ(v6->master_addr, "[fd00::1]");
  llvm::Expected<NodeIdentity> port = ResolveNode({}, Without(JobSetEnv("0"), "MASTER_PORT"), Hgx());
  ASSERT_TRUE(static_cast<bool>(port)) << llvm::toString(port.takeError());
  EXPECT_EQ(port->master_port, 29500);
}

TEST(RankIdentity, EveryMismatchAtOnce) {
  Environment env = JobSetEnv("7");
  env["PET_NNODES"] = "8";
  env["WORLD_SIZE"] = "48";
  env["MASTER_PORT"] = "65536";
  EXPECT_EQ(NodeFailure({}, env, Hgx()),
            "WORLD_SIZE=48 (environment) but plan.json has 32 ranks\n"
            "WORLD_SIZE=48 (environment) but PET_NNODES=8 (environment) x PET_NPROC_PER_NODE=8 (environment) = 64 "
            "processes\n"
            "PET_NNODES=8 (environment) but plan.json uses 4 nodes\n"
            "PET_NODE_RANK=7 (environment) but plan.json uses nodes 0..3\n"
            "MASTER_PORT=65536 (environment) is not a TCP port (1..65535)");
}

TEST(RankIdentity, RanksOfNode) {
  RankRange r = RanksOfNode(2, 8);
  EXPECT_EQ(r.first, 16);
  EXPECT_EQ(r.count, 8);
  EXPECT_TRUE(r.contains(23));
  EXPECT_FALSE(r.contains(24));
  EXPECT_FALSE(r.contains(15));
  std::vector<int64_t> one;
  for (int64_t x : RanksOfNode(0, 1)) one.push_back(x);
  EXPECT_EQ(one, std::vector<int64_t>({0}));
  EXPECT_EQ(RanksOfNode(-1, 8).count, 0);
  EXPECT_EQ(RanksOfNode(1, 0).count, 0);
  EXPECT_EQ(RanksOfNode(INT64_MAX / 4, 8).count, 0);
  EXPECT_EQ(RanksOfNode(INT64_MAX / 8, 8).count, 0);  // the end would overflow
  EXPECT_FALSE(RanksOfNode(INT64_MAX / 8, 8).contains(0));
}

TEST(RankIdentity, ProcessEnvironmentReadsOnlyIdentityVariables) {
  ::setenv("PET_NODE_RANK", "2", 1);
  ::setenv("AVF_UNRELATED_VARIABLE", "x", 1);
  Environment env = ProcessEnvironment();
  EXPECT_EQ(env["PET_NODE_RANK"], "2");
  EXPECT_EQ(env.count("AVF_UNRELATED_VARIABLE"), 0u);
  for (const auto& entry : env) {
    const std::string& name = entry.first;
    EXPECT_NE(
        std::find_if(IdentityVariables().begin(), IdentityVariables().end(), [&](const char* v) { return name == v; }),
        IdentityVariables().end());
  }
  ::unsetenv("PET_NODE_RANK");
  ::unsetenv("AVF_UNRELATED_VARIABLE");
}

TEST(RankIdentity, DescribeNamesEverySource) {
  IdentityFlags flags;
  flags.local_rank = "5";
  RankIdentity id = Resolve(flags, PyTorchJobEnv("2"), Hgx());
  EXPECT_EQ(Describe(id),
            "rank 21 of 32, local rank 5 of 8 on node 2 of 4 (PET_* environment); rendezvous job-master-0:23456\n"
            "  rank: PET_NODE_RANK=2 (environment) x PET_NPROC_PER_NODE=8 (environment) + --local-rank=5 (flag)\n"
            "  world size: WORLD_SIZE=32 (environment)\n"
            "  local rank: --local-rank=5 (flag)\n"
            "  node rank: PET_NODE_RANK=2 (environment)\n"
            "  processes per node: PET_NPROC_PER_NODE=8 (environment)\n"
            "  master: MASTER_ADDR=job-master-0 (environment), MASTER_PORT=23456 (environment)");
}

}  // namespace
}  // namespace avf::runtime
