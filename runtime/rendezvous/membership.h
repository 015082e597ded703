// Elastic membership: how the node launchers of an elastic job agree, round
// after round, on which of them train and on how many nodes (docs/elastic.md).
// The launcher of node slot 0 (the host) serves a store for the whole job,
// whose "ranks" are the launchers, one per slot; it decides every round, and
// the others read its decision. A launcher joins a round when it starts and
// whenever its ranks have ended without finishing the job.
//
// The keys, under "avf/elastic/":
//   r<R>/count     launchers that joined round R (a counter)
//   r<R>/slot/<i>  the slot of the i-th launcher to join round R (i from 1)
//   r<R>/result    the host's decision: "nodes N changes C slots a,b,..."
//                  (node rank k is the k-th slot), or "failed WHY"
//   r<R>/regrow    set by the host when it stops round R to grow the job
//   current        the newest decided round
//   done           the job's exit status, set by the host when it ends
//
//   Membership m(store, {.slot = 2, .slots = 4, .counts = {2, 4}});
//   auto round = m.NextRound();  // blocks until the host decides
//   if (round->node_rank >= 0) ...train on round->nodes nodes...
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

#include "rendezvous/store.h"

namespace avf::rendezvous {

struct MembershipOptions {
  int slot = 0;                 // this launcher's; slot 0 hosts and decides
  int slots = 1;                // the most nodes the job trains on
  std::vector<int64_t> counts;  // node counts the plan has a layout for, ascending
  // How long a round waits for the fewest nodes it can train on; then, once
  // they are there, for more (unless every slot has joined).
  milliseconds join_timeout{300'000};
  milliseconds last_call{30'000};
  // Checked while a round is awaited: true ends the wait with a kShutdown
  // error (the launcher was asked to stop).
  std::function<bool()> stop_requested;
};

struct RoundResult {
  int64_t round = 0;
  int64_t nodes = 0;        // the node count the round trains on
  int64_t node_rank = -1;   // this launcher's node; -1: it waits for the next round
  int64_t joined = 0;       // launchers in the round
  int64_t changes = 0;      // rounds so far whose node count differed from the round before
  std::vector<int> slots;   // the training slots by node rank
  std::optional<int> done;  // the job has ended with this status: no round
};

class Membership {
 public:
  Membership(StoreClient& store, MembershipOptions options);

  // Joins the next round and returns the host's decision for it (the host
  // makes it). A round that fails (fewer launchers than the fewest nodes
  // within join_timeout) is an error naming who joined.
  auto NextRound() -> llvm::Expected<RoundResult>;
  // The host, while round `round` trains: launchers waiting for the next one.
  auto Waiting(int64_t round) -> llvm::Expected<int64_t>;
  // The host: round `round` stops (at a checkpoint) so that the job grows.
  auto RequestRegrow(int64_t round) -> llvm::Error;
  auto RegrowRequested(int64_t round) -> llvm::Expected<bool>;
  // The host: the job ended with `status`; waiting launchers exit with it.
  auto Finish(int status) -> llvm::Error;
  // The most nodes with a layout among `available` launchers (0: none).
  auto BestCount(int64_t available) const -> int64_t;

 private:
  auto Join(int64_t round) -> llvm::Error;
  auto Decide(int64_t round) -> llvm::Expected<RoundResult>;
  auto AwaitDecision(int64_t round) -> llvm::Expected<RoundResult>;
  auto WaitForJoiners(int64_t round) -> llvm::Expected<int64_t>;
  auto Members(int64_t round, int64_t joined) -> llvm::Expected<std::vector<int>>;
  auto Done() -> llvm::Expected<std::optional<int>>;
  auto FirstRound() -> llvm::Expected<int64_t>;

  StoreClient& store_;
  MembershipOptions options_;
  int64_t next_round_ = 0;  // 0: not yet known
  int64_t last_nodes_ = 0, changes_ = 0;
};

// "nodes N changes C slots a,b,c" <-> RoundResult (round, nodes, changes,
// slots), the one spelling of a decision; nullopt for anything else.
auto FormatDecision(const RoundResult& r) -> std::string;
auto ParseDecision(std::string_view text) -> std::optional<RoundResult>;

}  // namespace avf::rendezvous
