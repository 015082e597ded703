// Rank identity: gather each value from its first source (identity.h), derive
// the rest, then check every value against the others and against the plan.
// All mismatches are reported together, each naming both values and their
// sources, so one run shows everything that is wrong with a pod's setup.
#include "plan/identity.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "plan/problems.h"
#include "plan_format/launch.h"

namespace avf::runtime {

namespace {

namespace pf = plan_format;

// torchrun's and the manifests' rendezvous port; the address defaults only
// when every rank runs on one node.
constexpr int kDefaultPort = 29500;
constexpr const char* kDefaultAddr = "127.0.0.1";

struct Sourced {
  int64_t value = 0;
  std::string origin;
  bool derived = false;  // computed from other values, so not an independent witness
};

// The value as it follows `NAME=`: bare when it is plain, else quoted.
auto Shown(llvm::StringRef value) -> std::string {
  bool plain = !value.empty() && value.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789._-:/[]") == llvm::StringRef::npos;
  return plain ? value.str() : "\"" + Printable(value) + "\"";
}

enum class CountParse { Ok, NotCount, TooLarge };

// Decimal digits only: no sign, no spaces, no trailing text, no overflow.
auto ParseCount(llvm::StringRef text, int64_t* out) -> CountParse {
  if (text.empty()) return CountParse::NotCount;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return CountParse::NotCount;
    if (MulOverflows(v, 10, &v) || AddOverflows(v, c - '0', &v)) {
      // Keep scanning: "99999999999999999999x" is garbage, not just too large.
      return text.find_first_not_of("0123456789") == llvm::StringRef::npos ? CountParse::TooLarge
                                                                           : CountParse::NotCount;
    }
  }
  *out = v;
  return CountParse::Ok;
}

class Resolver {
 public:
  Resolver(const IdentityFlags& flags, const Environment& env, const RunPlan& plan)
      : flags_(flags), env_(env), plan_(plan) {
    pet_ = Has(pf::kEnvNodeRank) || Has(pf::kEnvRanksPerNode) || Has(pf::kEnvNodes);
    torchrun_ = !pet_ && (Has(pf::kEnvRank) || Has(pf::kEnvWorldSize) || Has(pf::kEnvLocalRank) ||
                          Has(pf::kEnvGroupRank) || Has(pf::kEnvLocalWorldSize));
  }

  auto Node(NodeIdentity& out) -> llvm::Error;
  auto Rank(RankIdentity& out) -> llvm::Error;

 private:
  auto Has(llvm::StringRef name) const -> bool { return env_.count(name) > 0; }
  auto Count(llvm::StringRef text, std::string origin) -> std::optional<Sourced>;
  auto Pick(const std::optional<std::string>& flag, const char* flag_name, const char* variable)
      -> std::optional<Sourced>;
  void Gather();
  void DefaultsAndDerivations();
  void CheckAgainstPlan();
  void CheckLocal();
  void CheckNodeRanks();
  void Master();
  void Fill(NodeIdentity& out) const;
  auto Errors() -> llvm::Error;

  template <typename... Args>
  void Fail(fmt::format_string<Args...> format, Args&&... args) {
    errors_.push_back(fmt::format(format, std::forward<Args>(args)...));
  }

  const IdentityFlags& flags_;
  const Environment& env_;
  const RunPlan& plan_;
  bool pet_ = false, torchrun_ = false, single_ = false;
  std::optional<Sourced> rank_, world_, local_, node_, nproc_, nnodes_, port_;
  std::string addr_, addr_origin_;
  std::vector<std::string> errors_;
};

auto Resolver::Count(llvm::StringRef text, std::string origin) -> std::optional<Sourced> {
  int64_t v = 0;
  switch (ParseCount(text, &v)) {
    case CountParse::Ok: return Sourced{v, std::move(origin)};
    case CountParse::NotCount: Fail("{} is not a non-negative decimal integer", origin); break;
    case CountParse::TooLarge: Fail("{} is too large", origin); break;
  }
  return std::nullopt;
}

// The flag when given, else the variable (nullptr: no variable in this
// convention). A value that does not parse is reported and reads as unset.
auto Resolver::Pick(const std::optional<std::string>& flag, const char* flag_name, const char* variable)
    -> std::optional<Sourced> {
  if (flag) return Count(*flag, fmt::format("--{}={} (flag)", flag_name, Shown(*flag)));
  if (variable == nullptr) return std::nullopt;
  auto it = env_.find(variable);
  if (it == env_.end()) return std::nullopt;
  return Count(it->second, fmt::format("{}={} (environment)", variable, Shown(it->second)));
}

void Resolver::Gather() {
  bool any_env = pet_ || torchrun_;
  rank_ = Pick(flags_.rank, "rank", torchrun_ ? pf::kEnvRank : nullptr);
  world_ = Pick(flags_.world_size, "world-size", any_env ? pf::kEnvWorldSize : nullptr);
  local_ = Pick(flags_.local_rank, "local-rank", any_env ? pf::kEnvLocalRank : nullptr);
  node_ = Pick(flags_.node_rank, "node-rank", pet_ ? pf::kEnvNodeRank : torchrun_ ? pf::kEnvGroupRank : nullptr);
  nproc_ = Pick(flags_.nproc_per_node, "nproc-per-node",
                pet_        ? pf::kEnvRanksPerNode
                : torchrun_ ? pf::kEnvLocalWorldSize
                            : nullptr);
  nnodes_ = Pick(std::nullopt, "", pet_ ? pf::kEnvNodes : nullptr);
  port_ = Pick(flags_.master_port, "master-port", pf::kEnvMasterPort);
  bool any_flag = flags_.rank || flags_.world_size || flags_.local_rank || flags_.node_rank || flags_.nproc_per_node;
  single_ = !any_env && !any_flag;
}

// The plan supplies what nobody said; a one-rank plan with nothing set is
// rank 0. Node and local rank follow from a given global rank.
void Resolver::DefaultsAndDerivations() {
  auto plan_ranks = static_cast<int64_t>(plan_.ranks.size());
  if (!nproc_) nproc_ = Sourced{plan_.hardware.ranks_per_node, "plan.json (its ranks per node)", true};
  if (single_ && plan_ranks != 1) {
    Fail(
        "no rank identity: neither flags (--rank, --node-rank, ...) nor the environment ({}, {}, {} as the "
        "manifests set them, or torchrun's {}, {}, {}) say which rank this is, and plan.json has {} ranks",
        pf::kEnvNodeRank, pf::kEnvRanksPerNode, pf::kEnvNodes, pf::kEnvRank, pf::kEnvWorldSize, pf::kEnvLocalRank,
        plan_ranks);
    return;
  }
  if (single_) node_ = local_ = rank_ = Sourced{0, "default (one-rank plan, no rank set)", true};
  if (!world_ && nnodes_ && nproc_->value > 0 && plan_ranks > 0) {
    int64_t w = 0;
    if (!MulOverflows(nnodes_->value, nproc_->value, &w)) {
      world_ = Sourced{w, fmt::format("{} x {}", nnodes_->origin, nproc_->origin), true};
    }
  }
  if (!world_) world_ = Sourced{plan_ranks, "plan.json", true};
  if (nproc_->value < 1) {
    Fail("{} must be at least 1", nproc_->origin);
    return;
  }
  if (rank_ && !node_)
    node_ = Sourced{rank_->value / nproc_->value, fmt::format("{} / {}", rank_->origin, nproc_->origin), true};
  if (!node_ && plan_.hardware.nodes == 1) node_ = Sourced{0, "default (plan.json uses one node)", true};
  if (!node_) {
    Fail(
        "the node rank is not set: pass --node-rank or --rank, or set {} (or torchrun's {}); plan.json has {} "
        "ranks on {} nodes",
        pf::kEnvNodeRank, pf::kEnvRank, plan_ranks, plan_.hardware.nodes);
  }
}

void Resolver::CheckAgainstPlan() {
  auto plan_ranks = static_cast<int64_t>(plan_.ranks.size());
  int64_t plan_nproc = plan_.hardware.ranks_per_node, plan_nodes = plan_.hardware.nodes;
  // A derived world size is checked through the values it came from.
  if (!world_->derived && world_->value != plan_ranks) {
    Fail("{} but plan.json has {} ranks", world_->origin, plan_ranks);
  }
  if (rank_ && !rank_->derived && rank_->value >= plan_ranks) {
    Fail("{} but plan.json has ranks 0..{}", rank_->origin, plan_ranks - 1);
    return;  // the node derived from it would only repeat this
  }
  if (nnodes_ && !world_->derived) {
    int64_t w = 0;
    if (MulOverflows(nnodes_->value, nproc_->value, &w) || w != world_->value) {
      Fail("{} but {} x {} = {} processes", world_->origin, nnodes_->origin, nproc_->origin, w);
    }
  }
  if (nnodes_ && nnodes_->value != plan_nodes) Fail("{} but plan.json uses {} nodes", nnodes_->origin, plan_nodes);
  if (nproc_->value != plan_nproc) {
    Fail("{} but plan.json runs {} ranks per node (hardware.gpus_per_node = {})", nproc_->origin, plan_nproc,
         plan_.hardware.gpus_per_node);
  }
  if (node_ && node_->value >= plan_nodes) {
    Fail("{} but plan.json uses nodes 0..{}", node_->origin, plan_nodes - 1);
  }
}

// The node's ranks exist in the plan and sit on that node, GPU by GPU.
void Resolver::CheckNodeRanks() {
  RankRange ranks = RanksOfNode(node_->value, nproc_->value);
  auto plan_ranks = static_cast<int64_t>(plan_.ranks.size());
  for (int64_t r : ranks) {
    if (r >= plan_ranks) {
      Fail("{} with {} runs ranks {}..{}, but plan.json has ranks 0..{}", node_->origin, nproc_->origin, ranks.first,
           ranks.first + ranks.count - 1, plan_ranks - 1);
      return;
    }
    const PlanRank& pr = plan_.ranks[r];
    if (pr.node != node_->value || pr.gpu != r - ranks.first) {
      Fail("{} runs rank {} as local rank {}, but plan.json puts rank {} on node {}, GPU {} (ranks[{}])", node_->origin,
           r, r - ranks.first, r, pr.node, pr.gpu, r);
      return;
    }
  }
}

// Local and global rank: given, derived from each other, or (one process per
// node) 0; a given global rank must fall where node and local rank say.
void Resolver::CheckLocal() {
  int64_t nproc = nproc_->value;
  if (rank_) {
    if (!node_->derived && rank_->value / nproc != node_->value) {
      Fail("{} is on node {} with {}, but {}", rank_->origin, rank_->value / nproc, nproc_->origin, node_->origin);
    }
    if (local_ && rank_->value % nproc != local_->value) {
      Fail("{} is local rank {} of its node with {}, but {}", rank_->origin, rank_->value % nproc, nproc_->origin,
           local_->origin);
    }
    if (!local_) local_ = Sourced{rank_->value % nproc, fmt::format("{} mod {}", rank_->origin, nproc_->origin), true};
    return;
  }
  if (!local_ && nproc == 1) local_ = Sourced{0, "default (one process per node)", true};
  if (!local_) {
    Fail(
        "the local rank is not set: {} starts {} processes on node {}; pass --local-rank or set {} (a per-node "
        "avf-run starts RanksOfNode with --local-rank each)",
        nproc_->origin, nproc, node_->value, pf::kEnvLocalRank);
    return;
  }
  if (local_->value >= nproc) {
    Fail("{} but {} gives local ranks 0..{}", local_->origin, nproc_->origin, nproc - 1);
    return;
  }
  rank_ = Sourced{node_->value * nproc + local_->value,
                  fmt::format("{} x {} + {}", node_->origin, nproc_->origin, local_->origin), true};
}

void Resolver::Master() {
  if (flags_.master_addr) {
    addr_ = *flags_.master_addr;
    addr_origin_ = "--master-addr=" + Shown(addr_) + " (flag)";
  } else if (auto it = env_.find(pf::kEnvMasterAddr); it != env_.end()) {
    addr_ = it->second;
    addr_origin_ = std::string(pf::kEnvMasterAddr) + "=" + Shown(addr_) + " (environment)";
  } else if (plan_.hardware.nodes <= 1) {
    addr_ = kDefaultAddr;
    addr_origin_ = "default (plan.json uses one node)";
  } else {
    Fail("{} is not set and plan.json spans {} nodes: pass --master-addr or set {} to rank 0's host",
         pf::kEnvMasterAddr, plan_.hardware.nodes, pf::kEnvMasterAddr);
  }
  // Whitespace, quotes and control characters are never part of a host name.
  bool bad_addr = addr_.empty() || std::any_of(addr_.begin(), addr_.end(), [](char c) {
                    auto u = static_cast<unsigned char>(c);
                    return u <= 0x20 || u == 0x7f || c == '"' || c == '\\';
                  });
  if (!addr_origin_.empty() && bad_addr) Fail("{} is not a host name or address", addr_origin_);
  if (!port_) port_ = Sourced{kDefaultPort, "default (torchrun's port)", true};
  else if (port_->value < 1 || port_->value > 65535) Fail("{} is not a TCP port (1..65535)", port_->origin);
}

void Resolver::Fill(NodeIdentity& out) const {
  out.node_rank = node_->value;
  out.nproc_per_node = nproc_->value;
  out.world_size = world_->value;
  out.nnodes = nnodes_ ? nnodes_->value : plan_.hardware.nodes;
  out.master_addr = addr_;
  out.master_port = static_cast<int>(port_->value);
  out.convention = single_     ? IdentityConvention::SingleRank
                   : pet_      ? IdentityConvention::Pet
                   : torchrun_ ? IdentityConvention::Torchrun
                               : IdentityConvention::Flags;
  out.origin.node_rank = node_->origin;
  out.origin.nproc_per_node = nproc_->origin;
  out.origin.world_size = world_->origin;
  out.origin.nnodes = nnodes_ ? nnodes_->origin : "plan.json";
  out.origin.master_addr = addr_origin_;
  out.origin.master_port = port_->origin;
}

auto Resolver::Errors() -> llvm::Error {
  if (errors_.empty()) return llvm::Error::success();
  std::string text;
  for (const std::string& e : errors_) text += (text.empty() ? "" : "\n") + e;
  errors_.clear();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), text);
}

auto Resolver::Node(NodeIdentity& out) -> llvm::Error {
  Gather();
  if (!errors_.empty()) return Errors();
  DefaultsAndDerivations();
  if (!errors_.empty()) return Errors();
  CheckAgainstPlan();
  Master();
  if (!errors_.empty()) return Errors();
  CheckNodeRanks();
  if (!errors_.empty()) return Errors();
  Fill(out);
  return llvm::Error::success();
}

auto Resolver::Rank(RankIdentity& out) -> llvm::Error {
  if (llvm::Error e = Node(out)) return e;
  CheckLocal();
  if (!errors_.empty()) return Errors();
  out.rank = rank_->value;
  out.local_rank = local_->value;
  out.origin.rank = rank_->origin;
  out.origin.local_rank = local_->origin;
  return llvm::Error::success();
}

}  // namespace

auto IdentityVariables() -> llvm::ArrayRef<const char*> { return pf::kRankVariables; }

auto ProcessEnvironment() -> Environment {
  Environment env;
  for (const char* name : pf::kRankVariables) {
    if (const char* value = std::getenv(name)) env[name] = value;
  }
  return env;
}

auto Name(IdentityConvention c) -> llvm::StringRef {
  switch (c) {
    case IdentityConvention::Flags: return "flags";
    case IdentityConvention::Pet: return "PET_* environment";
    case IdentityConvention::Torchrun: return "torchrun environment";
    case IdentityConvention::SingleRank: return "single-rank default";
  }
  return "?";
}

auto ResolveNode(const IdentityFlags& flags, const Environment& env, const RunPlan& plan)
    -> llvm::Expected<NodeIdentity> {
  NodeIdentity out;
  if (llvm::Error e = Resolver(flags, env, plan).Node(out)) return e;
  return out;
}

auto ResolveIdentity(const IdentityFlags& flags, const Environment& env, const RunPlan& plan)
    -> llvm::Expected<RankIdentity> {
  RankIdentity out;
  if (llvm::Error e = Resolver(flags, env, plan).Rank(out)) return e;
  return out;
}

auto RanksOfNode(int64_t node_rank, int64_t nproc) -> RankRange {
  int64_t first = 0, end = 0;
  if (node_rank < 0 || nproc <= 0 || MulOverflows(node_rank, nproc, &first) || AddOverflows(first, nproc, &end)) {
    return {};
  }
  return {first, nproc};
}

auto Describe(const RankIdentity& id) -> std::string {
  return fmt::format(
      "rank {} of {}, local rank {} of {} on node {} of {} ({}); rendezvous {}:{}\n"
      "  rank: {}\n  world size: {}\n  local rank: {}\n  node rank: {}\n  processes per node: {}\n"
      "  master: {}, {}",
      id.rank, id.world_size, id.local_rank, id.nproc_per_node, id.node_rank, id.nnodes, Name(id.convention).str(),
      id.master_addr, id.master_port, id.origin.rank, id.origin.world_size, id.origin.local_rank, id.origin.node_rank,
      id.origin.nproc_per_node, id.origin.master_addr, id.origin.master_port);
}

}  // namespace avf::runtime
