#include "rendezvous/membership.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>

namespace avf::rendezvous {

namespace {

using Clock = std::chrono::steady_clock;

// How often a waiting launcher looks for the job's end, and the host for
// joiners; and the longest a joiner's slot may lag its count.
constexpr milliseconds kPoll{200};
constexpr milliseconds kSlotWithin{10'000};

auto Key(int64_t round, std::string_view what) -> std::string { return fmt::format("avf/elastic/r{}/{}", round, what); }

constexpr const char* kCurrentKey = "avf/elastic/current";
constexpr const char* kDoneKey = "avf/elastic/done";

auto IsTimeout(llvm::Error& e) -> bool {
  bool timeout = false;
  e = llvm::handleErrors(std::move(e), [&](std::unique_ptr<StoreError> s) -> llvm::Error {
    if (s->code() == StoreErrc::kTimeout) {
      timeout = true;
      return llvm::Error::success();
    }
    return llvm::Error(std::move(s));
  });
  return timeout;
}

auto Failed(std::string message) -> llvm::Error { return MakeError(StoreErrc::kTimeout, std::move(message)); }

auto Stopped(int64_t round) -> llvm::Error {
  return MakeError(StoreErrc::kShutdown, fmt::format("asked to stop while round {} was awaited", round));
}

auto SlotList(const std::vector<int>& slots) -> std::string {
  std::string text;
  for (int s : slots) text += (text.empty() ? "" : ",") + std::to_string(s);
  return text;
}

}  // namespace

auto FormatDecision(const RoundResult& r) -> std::string {
  return fmt::format("nodes {} changes {} slots {}", r.nodes, r.changes, SlotList(r.slots));
}

auto ParseDecision(std::string_view text) -> std::optional<RoundResult> {
  llvm::SmallVector<llvm::StringRef, 6> words;
  llvm::StringRef(text).split(words, ' ');
  RoundResult r;
  if (words.size() != 6 || words[0] != "nodes" || words[2] != "changes" || words[4] != "slots") return std::nullopt;
  if (!llvm::to_integer(words[1], r.nodes, 10) || !llvm::to_integer(words[3], r.changes, 10)) return std::nullopt;
  llvm::SmallVector<llvm::StringRef, 16> slots;
  words[5].split(slots, ',');
  for (llvm::StringRef s : slots) {
    int slot = 0;
    if (!llvm::to_integer(s, slot, 10) || slot < 0) return std::nullopt;
    r.slots.push_back(slot);
  }
  if (r.nodes < 1 || static_cast<int64_t>(r.slots.size()) != r.nodes) return std::nullopt;
  return r;
}

Membership::Membership(StoreClient& store, MembershipOptions options) : store_(store), options_(std::move(options)) {}

auto Membership::BestCount(int64_t available) const -> int64_t {
  int64_t best = 0;
  for (int64_t c : options_.counts) {
    if (c <= available && c <= options_.slots) best = std::max(best, c);
  }
  return best;
}

auto Membership::FirstRound() -> llvm::Expected<int64_t> {
  if (options_.slot == 0) return 1;
  std::vector<std::string> keys{kCurrentKey};
  auto present = store_.Check(keys);
  if (!present) return present.takeError();
  if (!(*present)[0]) return 1;
  auto current = store_.Get(kCurrentKey, options_.join_timeout);
  if (!current) return current.takeError();
  int64_t round = 0;
  if (!llvm::to_integer(*current, round, 10)) return Failed("the elastic store's round is not a number");
  return round + 1;
}

auto Membership::Join(int64_t round) -> llvm::Error {
  auto index = store_.Add(Key(round, "count"), 1);
  if (!index) return index.takeError();
  return store_.Set(Key(round, fmt::format("slot/{}", *index)), std::to_string(options_.slot));
}

auto Membership::NextRound() -> llvm::Expected<RoundResult> {
  if (next_round_ == 0) {
    auto first = FirstRound();
    if (!first) return first.takeError();
    next_round_ = *first;
  }
  int64_t round = next_round_++;
  if (llvm::Error e = Join(round)) return e;
  auto result = options_.slot == 0 ? Decide(round) : AwaitDecision(round);
  if (!result) return result.takeError();
  result->round = round;
  auto own = std::find(result->slots.begin(), result->slots.end(), options_.slot);
  result->node_rank = own == result->slots.end() ? -1 : own - result->slots.begin();
  return result;
}

// Until every slot joined, or the fewest nodes joined and the last call
// passed; the joiners then.
auto Membership::WaitForJoiners(int64_t round) -> llvm::Expected<int64_t> {
  Clock::time_point start = Clock::now();
  std::optional<Clock::time_point> enough_since;
  int64_t fewest = options_.counts.empty() ? 1 : options_.counts.front();
  for (;;) {
    if (options_.stop_requested && options_.stop_requested()) return Stopped(round);
    auto joined = store_.Add(Key(round, "count"), 0);
    if (!joined) return joined.takeError();
    if (*joined >= options_.slots) return *joined;
    Clock::time_point now = Clock::now();
    if (*joined >= fewest) {
      if (!enough_since) enough_since = now;
      if (now - *enough_since >= options_.last_call) return *joined;
    } else if (now - start >= options_.join_timeout) {
      std::string why = fmt::format(
          "round {}: {} of the job's {} node launchers joined within {}, and it trains on no fewer than {} nodes "
          "(the fewest with a layout); the job ends",
          round, *joined, options_.slots, FormatSeconds(options_.join_timeout), fewest);
      if (llvm::Error e = store_.Set(Key(round, "result"), "failed " + why)) return e;
      return Failed(why);
    }
    std::this_thread::sleep_for(kPoll);
  }
}

auto Membership::Members(int64_t round, int64_t joined) -> llvm::Expected<std::vector<int>> {
  std::vector<int> slots;
  for (int64_t i = 1; i <= joined; ++i) {
    auto slot = store_.Get(Key(round, fmt::format("slot/{}", i)), kSlotWithin);
    if (!slot) return slot.takeError();
    int value = 0;
    if (!llvm::to_integer(*slot, value, 10) || value < 0 || value >= options_.slots) {
      return Failed(
          fmt::format("round {}: a launcher joined with slot `{}`, not 0-{}", round, *slot, options_.slots - 1));
    }
    if (std::find(slots.begin(), slots.end(), value) == slots.end()) slots.push_back(value);
  }
  return slots;
}

// The host's decision: itself as node 0, then the others in the order they
// joined, as many as the largest count with a layout.
auto Membership::Decide(int64_t round) -> llvm::Expected<RoundResult> {
  auto joined = WaitForJoiners(round);
  if (!joined) return joined.takeError();
  auto members = Members(round, *joined);
  if (!members) return members.takeError();
  std::stable_partition(members->begin(), members->end(), [](int s) { return s == 0; });
  RoundResult r;
  r.joined = static_cast<int64_t>(members->size());
  r.nodes = BestCount(r.joined);
  r.slots.assign(members->begin(), members->begin() + r.nodes);
  if (last_nodes_ != 0 && r.nodes != last_nodes_) ++changes_;
  last_nodes_ = r.nodes;
  r.changes = changes_;
  if (llvm::Error e = store_.Set(Key(round, "result"), FormatDecision(r))) return e;
  if (llvm::Error e = store_.Set(kCurrentKey, std::to_string(round))) return e;
  return r;
}

auto Membership::Done() -> llvm::Expected<std::optional<int>> {
  std::vector<std::string> keys{kDoneKey};
  auto present = store_.Check(keys);
  if (!present) return present.takeError();
  if (!(*present)[0]) return std::nullopt;
  auto status = store_.Get(kDoneKey, kSlotWithin);
  if (!status) return status.takeError();
  int value = 1;
  return llvm::to_integer(*status, value, 10) ? value : 1;
}

auto Membership::AwaitDecision(int64_t round) -> llvm::Expected<RoundResult> {
  for (;;) {
    if (options_.stop_requested && options_.stop_requested()) return Stopped(round);
    auto text = store_.Get(Key(round, "result"), kPoll * 5);
    if (text) {
      if (llvm::StringRef(*text).startswith("failed ")) return Failed(text->substr(7));
      auto r = ParseDecision(*text);
      if (!r) return Failed(fmt::format("round {}: the host's decision `{}` does not parse", round, *text));
      r->joined = static_cast<int64_t>(r->slots.size());
      return *r;
    }
    llvm::Error e = text.takeError();
    if (!IsTimeout(e)) return e;
    auto done = Done();
    if (!done) return done.takeError();
    if (*done) return RoundResult{.round = round, .done = **done};
  }
}

auto Membership::Waiting(int64_t round) -> llvm::Expected<int64_t> { return store_.Add(Key(round + 1, "count"), 0); }

auto Membership::RequestRegrow(int64_t round) -> llvm::Error { return store_.Set(Key(round, "regrow"), "1"); }

auto Membership::RegrowRequested(int64_t round) -> llvm::Expected<bool> {
  std::vector<std::string> keys{Key(round, "regrow")};
  auto present = store_.Check(keys);
  if (!present) return present.takeError();
  return (*present)[0];
}

auto Membership::Finish(int status) -> llvm::Error { return store_.Set(kDoneKey, std::to_string(status)); }

}  // namespace avf::rendezvous
