// The InfiniBand (and RoCE) port check of `avf-run preflight`: which adapter
// ports NCCL would use on this node, and whether each one is ACTIVE.
//
// NCCL silently leaves out a port that is not ACTIVE, so a node with a dead
// link trains on fewer rails (or fails in init) instead of being named. The
// ports come from NCCL_IB_HCA, read as NCCL reads it:
//
//   mlx5_0,mlx5_1      prefixes: `mlx5_1` also selects mlx5_10 and mlx5_11
//   =mlx5_0,mlx5_1     exact names
//   mlx5_0:1,mlx5_1:1  one port of each (without `:port`, every port)
//   ^mlx5_2 / ^=mlx5_2 every adapter port except those matched
//
// and each port's state from sysfs, ROOT/class/infiniband/DEV/ports/N/state
// ("4: ACTIVE"; ROOT is /sys, or $AVF_SYSFS_ROOT for tests).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/Support/Error.h>

namespace avf::run {

struct HcaEntry {
  std::string name;         // a prefix of adapter names, or the exact name with `=`
  std::optional<int> port;  // nullopt: every port
};

struct HcaList {
  bool exclude = false;  // `^`: every port except the matched ones
  bool exact = false;    // `=`: names match exactly, not as prefixes
  std::vector<HcaEntry> entries;
};

// NCCL_IB_HCA taken apart. Empty entries are skipped as NCCL skips them; a
// port that is not a number from 1 to 255 is an error naming the entry.
auto ParseHcaList(std::string_view text) -> llvm::Expected<HcaList>;

// Whether `entry` matches port `port` of adapter `device`.
auto Matches(const HcaList& list, const HcaEntry& entry, std::string_view device, int port) -> bool;

// Whether NCCL would use the port: matched by some entry (an empty list
// matches everything), inverted by `^`.
auto Selected(const HcaList& list, std::string_view device, int port) -> bool;

// Which ports a node checks, decided from the environment NCCL reads (the
// manifests set NCCL_IB_DISABLE from the fabric's kind, and NCCL_IB_HCA from
// the cluster's `hcas`); plan.json names the network but not its kind.
struct PortScope {
  enum class Kind { kSkip, kListed, kEvery };
  Kind kind = Kind::kSkip;
  HcaList list;      // kListed
  std::string note;  // why these ports, or why none
};

// NCCL_IB_DISABLE set to a number other than 0: skip (NCCL uses sockets).
// NCCL_IB_HCA set and not empty: the ports it selects. NCCL_IB_DISABLE=0:
// every port of every adapter. Otherwise skip, saying why. `network` is the
// plan's hardware.network, for the note.
auto DecidePortScope(const std::optional<std::string>& ib_hca, const std::optional<std::string>& ib_disable,
                     const std::optional<std::string>& network) -> llvm::Expected<PortScope>;

struct PortState {
  std::string device;
  int port = 0;
  std::string state;       // "ACTIVE", "DOWN", "INIT", "ARMED", ... (the name after "N: ")
  std::string phys_state;  // "LinkUp", "Polling", ...; "" when unreadable
  std::string rate;        // "400 Gb/sec"; "" when unreadable
  auto active() const -> bool { return state == "ACTIVE"; }
  auto name() const -> std::string;  // "mlx5_0:1"
};

struct PortCheck {
  bool checked = false;
  std::string note;                   // PortScope::note
  std::vector<PortState> ports;       // the ports checked, by adapter name then port
  std::vector<std::string> problems;  // one sentence each; an inactive port is one
};

// The sysfs root: $AVF_SYSFS_ROOT when set and not empty, else "/sys".
auto SysfsRoot() -> std::string;

// Reads every selected port's state under `sysfs_root`. Besides inactive
// ports, a problem is an entry of NCCL_IB_HCA that matches no adapter or port
// (NCCL ignores it), a scope that leaves no port, and a missing or unreadable
// sysfs folder.
auto CheckPorts(const std::string& sysfs_root, const PortScope& scope) -> PortCheck;

}  // namespace avf::run
