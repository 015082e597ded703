// The port check of avf-run preflight (runtime/run/ib_ports.h): NCCL_IB_HCA
// read as NCCL reads it, the scope from the environment, and port states
// from a fake sysfs tree.
#include <fstream>

#include <gtest/gtest.h>

#include "run/ib_ports.h"
#include "temp_dir.h"

namespace avf::run {
namespace {

namespace fs = std::filesystem;

auto Parse(std::string_view text) -> HcaList {
  auto list = ParseHcaList(text);
  EXPECT_TRUE(static_cast<bool>(list)) << (list ? "" : llvm::toString(list.takeError()));
  return list ? *list : HcaList{};
}

TEST(HcaList, PlainNamesArePrefixesOfEveryPort) {
  HcaList l = Parse("mlx5_0,mlx5_1");
  EXPECT_FALSE(l.exclude);
  EXPECT_FALSE(l.exact);
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_EQ(l.entries[1].name, "mlx5_1");
  EXPECT_FALSE(l.entries[1].port);
  EXPECT_TRUE(Selected(l, "mlx5_1", 1));
  EXPECT_TRUE(Selected(l, "mlx5_10", 2));  // a prefix, as NCCL matches it
  EXPECT_FALSE(Selected(l, "mlx5_2", 1));
}

TEST(HcaList, EqualsMatchesWholeNamesAndPortsNarrow) {
  HcaList l = Parse("=mlx5_0:1,mlx5_1");
  EXPECT_TRUE(l.exact);
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_EQ(l.entries[0].port, 1);
  EXPECT_TRUE(Selected(l, "mlx5_0", 1));
  EXPECT_FALSE(Selected(l, "mlx5_0", 2));
  EXPECT_TRUE(Selected(l, "mlx5_1", 2));
  EXPECT_FALSE(Selected(l, "mlx5_10", 1));
}

TEST(HcaList, CaretExcludesTheMatchedPorts) {
  HcaList l = Parse("^=mlx5_2:1");
  EXPECT_TRUE(l.exclude);
  EXPECT_TRUE(l.exact);
  EXPECT_FALSE(Selected(l, "mlx5_2", 1));
  EXPECT_TRUE(Selected(l, "mlx5_2", 2));
  EXPECT_TRUE(Selected(l, "mlx5_3", 1));
  HcaList prefix = Parse("^mlx5_1");
  EXPECT_FALSE(prefix.exact);
  EXPECT_FALSE(Selected(prefix, "mlx5_12", 1));
  EXPECT_TRUE(Selected(prefix, "mlx5_2", 1));
}

TEST(HcaList, EmptyEntriesAreSkippedAndAnEmptyListMatchesEverything) {
  HcaList l = Parse(",mlx5_0,,");
  ASSERT_EQ(l.entries.size(), 1u);
  EXPECT_TRUE(Selected(Parse("="), "anything", 3));
  EXPECT_FALSE(Selected(Parse("^"), "anything", 3));
}

TEST(HcaList, APortMustBeANumber) {
  for (std::string_view bad : {"mlx5_0:", "mlx5_0:x", "mlx5_0:0", "mlx5_0:256", "=:1", "mlx5_0:1:2"}) {
    auto list = ParseHcaList(bad);
    ASSERT_FALSE(static_cast<bool>(list)) << bad;
    EXPECT_NE(llvm::toString(list.takeError()).find("is not ADAPTER or ADAPTER:PORT"), std::string::npos) << bad;
  }
}

auto Scope(std::optional<std::string> hca, std::optional<std::string> disable,
           std::optional<std::string> network = "ib_ndr") -> PortScope {
  auto scope = DecidePortScope(hca, disable, network);
  EXPECT_TRUE(static_cast<bool>(scope));
  return scope ? *scope : PortScope{};
}

TEST(PortScope, FollowsWhatNcclReads) {
  EXPECT_EQ(Scope("=mlx5_0", "1").kind, PortScope::Kind::kSkip);
  EXPECT_EQ(Scope("=mlx5_0", "1").note, "NCCL_IB_DISABLE=1: NCCL uses TCP sockets");
  PortScope listed = Scope("=mlx5_0", "0");
  EXPECT_EQ(listed.kind, PortScope::Kind::kListed);
  EXPECT_EQ(listed.note, "NCCL_IB_HCA==mlx5_0");
  EXPECT_EQ(Scope("=mlx5_0", std::nullopt).kind, PortScope::Kind::kListed);
  EXPECT_EQ(Scope(std::nullopt, "0").kind, PortScope::Kind::kEvery);
  EXPECT_EQ(Scope("", "0").kind, PortScope::Kind::kEvery);
  EXPECT_EQ(Scope(std::nullopt, "not a number").kind, PortScope::Kind::kEvery);  // NCCL reads it as 0
  PortScope unset = Scope(std::nullopt, std::nullopt);
  EXPECT_EQ(unset.kind, PortScope::Kind::kSkip);
  EXPECT_NE(unset.note.find("set NCCL_IB_DISABLE=0"), std::string::npos);
  EXPECT_EQ(Scope(std::nullopt, std::nullopt, std::nullopt).note, "the plan names no network");
  EXPECT_FALSE(static_cast<bool>(DecidePortScope("mlx5_0:x", std::nullopt, std::nullopt)));
}

// A sysfs tree: ROOT/class/infiniband/DEV/ports/N/{state,phys_state,rate}.
class FakeSysfs : public ::testing::Test {
 protected:
  void Port(const std::string& device, int port, const std::string& state, const std::string& phys = "5: LinkUp") {
    fs::path dir = Dir() / device / "ports" / std::to_string(port);
    fs::create_directories(dir);
    std::ofstream(dir / "state") << state << "\n";
    std::ofstream(dir / "phys_state") << phys << "\n";
    std::ofstream(dir / "rate") << "400 Gb/sec (4X NDR)\n";
  }
  auto Dir() const -> fs::path { return fs::path(tmp_.path()) / "class" / "infiniband"; }
  auto Check(std::optional<std::string> hca, std::optional<std::string> disable = "0") -> PortCheck {
    return CheckPorts(tmp_.path(), Scope(hca, disable));
  }

  testing::TempDir tmp_{"avf-preflight-sysfs"};
};

TEST_F(FakeSysfs, EveryListedPortActive) {
  Port("mlx5_0", 1, "4: ACTIVE");
  Port("mlx5_1", 1, "4: ACTIVE");
  Port("mlx5_2", 1, "1: DOWN", "3: Disabled");  // not listed: not NCCL's
  PortCheck c = Check("=mlx5_0,mlx5_1");
  EXPECT_TRUE(c.checked);
  EXPECT_TRUE(c.problems.empty()) << c.problems.front();
  ASSERT_EQ(c.ports.size(), 2u);
  EXPECT_EQ(c.ports[0].name(), "mlx5_0:1");
  EXPECT_EQ(c.ports[0].state, "ACTIVE");
  EXPECT_EQ(c.ports[0].phys_state, "LinkUp");
  EXPECT_EQ(c.ports[0].rate, "400 Gb/sec");
}

TEST_F(FakeSysfs, ADownPortIsNamedWithItsPhysicalState) {
  Port("mlx5_0", 1, "4: ACTIVE");
  Port("mlx5_2", 1, "1: DOWN", "2: Polling");
  PortCheck c = Check("mlx5_0,mlx5_2");
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0], "port mlx5_2:1 is DOWN (physical state Polling)");
  EXPECT_FALSE(c.ports[1].active());
}

TEST_F(FakeSysfs, UnsetListChecksEveryPortOfEveryAdapterInOrder) {
  Port("mlx5_10", 1, "4: ACTIVE");
  Port("mlx5_9", 2, "2: INIT");
  Port("mlx5_9", 1, "4: ACTIVE");
  PortCheck c = Check(std::nullopt);
  ASSERT_EQ(c.ports.size(), 3u);
  EXPECT_EQ(c.ports[0].name(), "mlx5_10:1");
  EXPECT_EQ(c.ports[1].name(), "mlx5_9:1");
  EXPECT_EQ(c.ports[2].name(), "mlx5_9:2");
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0], "port mlx5_9:2 is INIT (physical state LinkUp)");
}

TEST_F(FakeSysfs, AnEntryThatMatchesNothingIsAProblem) {
  Port("mlx5_0", 1, "4: ACTIVE");
  PortCheck exact = Check("=mlx5_0,mlx5_7");
  ASSERT_EQ(exact.problems.size(), 1u);
  EXPECT_EQ(exact.problems[0],
            "NCCL_IB_HCA names `mlx5_7`, which matches no adapter port under " + Dir().string() + " (there: mlx5_0:1)");
  PortCheck port = Check("mlx5_0:2");
  ASSERT_EQ(port.problems.size(), 1u);
  EXPECT_NE(port.problems[0].find("names the prefix `mlx5_0:2`"), std::string::npos);
}

TEST_F(FakeSysfs, AnExclusionLeavesTheOtherPorts) {
  Port("mlx5_0", 1, "4: ACTIVE");
  Port("mlx5_1", 1, "1: DOWN");
  PortCheck c = Check("^=mlx5_1");
  EXPECT_TRUE(c.problems.empty());
  ASSERT_EQ(c.ports.size(), 1u);
  PortCheck none = Check("^mlx5");
  ASSERT_EQ(none.problems.size(), 1u);
  EXPECT_NE(none.problems[0].find("leaves NCCL no adapter port"), std::string::npos);
}

TEST_F(FakeSysfs, NoAdapterFolderOrAnUnreadableState) {
  PortCheck missing = Check(std::nullopt);
  ASSERT_EQ(missing.problems.size(), 1u);
  EXPECT_NE(missing.problems[0].find(Dir().string() + " does not exist"), std::string::npos);
  fs::create_directories(Dir() / "mlx5_0" / "ports" / "1" / "state");  // a folder where the file should be
  PortCheck unreadable = Check(std::nullopt);
  ASSERT_EQ(unreadable.problems.size(), 1u);
  EXPECT_NE(unreadable.problems[0].find("port mlx5_0:1: cannot read"), std::string::npos);
}

TEST_F(FakeSysfs, SkippedScopeReadsNothing) {
  PortCheck c = Check("=mlx5_0", "1");
  EXPECT_FALSE(c.checked);
  EXPECT_TRUE(c.problems.empty());
}

}  // namespace
}  // namespace avf::run
