// CheckSchedule: proves a set of stage op lists runs to the end (schedule.h,
// "The invariant the executor relies on"). Three passes: each stage's list
// alone (every op once, backward after forward), each channel's send order
// against its receive order (static: FIFO links deliver in send order), then
// a lock-step simulation with unbounded send buffers for deadlocks.
#include <cassert>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "parallel/schedule.h"

namespace avf::parallel {

namespace {

auto Fail(const std::string& message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto At(int64_t stage, size_t index, const PipelineOp& op) -> std::string {
  return fmt::format("stage {}, op {} ({})", stage, index + 1, Describe(op));
}

// One stage's list alone: ranges, each forward and backward once, in order.
auto CheckStageOps(const PipelineShape& s, int64_t stage, const std::vector<PipelineOp>& ops) -> llvm::Error {
  // 0: not run, 1: forward run, 2: backward run too; index mb·V + chunk.
  std::vector<char> state(static_cast<size_t>(s.micro_batches * s.chunks), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const PipelineOp& op = ops[i];
    if (op.micro_batch < 0 || op.micro_batch >= s.micro_batches || op.chunk < 0 || op.chunk >= s.chunks) {
      return Fail(fmt::format("{}: outside micro-batches 0..{} and chunks 0..{}", At(stage, i, op), s.micro_batches - 1,
                              s.chunks - 1));
    }
    char& st = state[static_cast<size_t>(op.micro_batch * s.chunks + op.chunk)];
    bool forward = op.kind == OpKind::kForward;
    if (forward && st != 0) return Fail(fmt::format("{}: a second forward", At(stage, i, op)));
    if (!forward && st == 0) return Fail(fmt::format("{}: a backward before its forward", At(stage, i, op)));
    if (!forward && st == 2) return Fail(fmt::format("{}: a second backward", At(stage, i, op)));
    st = forward ? 1 : 2;
  }
  for (size_t k = 0; k < state.size(); ++k) {
    if (state[k] == 2) continue;
    auto mb = static_cast<int64_t>(k) / s.chunks, chunk = static_cast<int64_t>(k) % s.chunks;
    return Fail(fmt::format("stage {} never runs the {} of micro-batch {}, chunk {}", stage,
                            state[k] == 0 ? "forward" : "backward", mb, chunk));
  }
  return llvm::Error::success();
}

// A message on a channel: what the receiving op consumes.
struct Message {
  OpKind kind;
  int64_t micro_batch, chunk;  // the receiving op's
  friend auto operator==(const Message&, const Message&) -> bool = default;
};

auto Describe(const Message& m) -> std::string {
  return fmt::format("the {} of micro-batch {} for chunk {}", m.kind == OpKind::kForward ? "activations" : "gradient",
                     m.micro_batch, m.chunk);
}

// (from stage, to stage, kind): one FIFO link of one kind of message.
using ChannelKey = std::tuple<int64_t, int64_t, OpKind>;

// Per op of every stage: the channel it consumes from and sends on (-1: none),
// and the message lists of each channel and each pair in program order.
struct Wiring {
  std::map<ChannelKey, int64_t> ids;
  std::vector<ChannelKey> keys;
  std::vector<std::vector<int64_t>> recv_channel, send_channel;  // [stage][op]
  std::vector<std::vector<Message>> sent, consumed;              // [channel]
  std::map<std::pair<int64_t, int64_t>, std::vector<Message>> pair_sent, pair_consumed;
};

auto ChannelId(Wiring& w, const ChannelKey& key) -> int64_t {
  auto [it, added] = w.ids.try_emplace(key, static_cast<int64_t>(w.keys.size()));
  if (added) {
    w.keys.push_back(key);
    w.sent.emplace_back();
    w.consumed.emplace_back();
  }
  return it->second;
}

void WireStage(const PipelineShape& s, int64_t p, const std::vector<PipelineOp>& ops, Wiring& w) {
  for (const PipelineOp& op : ops) {
    OpLinks links = Neighbors(op, s.stages, p, s.chunks);
    int64_t in = -1, out = -1;
    if (links.recv_from) {
      in = ChannelId(w, {links.recv_from->stage, p, op.kind});
      Message m{op.kind, op.micro_batch, op.chunk};
      w.consumed[static_cast<size_t>(in)].push_back(m);
      w.pair_consumed[{links.recv_from->stage, p}].push_back(m);
    }
    if (links.send_to) {
      out = ChannelId(w, {p, links.send_to->stage, op.kind});
      Message m{op.kind, op.micro_batch, links.send_to->chunk};
      w.sent[static_cast<size_t>(out)].push_back(m);
      w.pair_sent[{p, links.send_to->stage}].push_back(m);
    }
    w.recv_channel[static_cast<size_t>(p)].push_back(in);
    w.send_channel[static_cast<size_t>(p)].push_back(out);
  }
}

// Every channel delivers in send order, so the receiver must consume in it.
auto CheckChannelOrder(const Wiring& w) -> llvm::Error {
  for (size_t c = 0; c < w.keys.size(); ++c) {
    const auto& [from, to, kind] = w.keys[c];
    const std::vector<Message>&sent = w.sent[c], &consumed = w.consumed[c];
    for (size_t i = 0; i < std::min(sent.size(), consumed.size()); ++i) {
      if (sent[i] == consumed[i]) continue;
      return Fail(
          fmt::format("stage {} sends {} as message #{} to stage {}, but stage {} expects {} as message #{} "
                      "(a link delivers in send order)",
                      from, Describe(sent[i]), i + 1, to, to, Describe(consumed[i]), i + 1));
    }
    if (sent.size() != consumed.size()) {
      return Fail(fmt::format("stage {} sends {} messages of {} to stage {}, which consumes {}", from, sent.size(),
                              kind == OpKind::kForward ? "activations" : "gradients", to, consumed.size()));
    }
  }
  return llvm::Error::success();
}

struct Simulation {
  std::vector<size_t> next;             // [stage]: index of its next op
  std::vector<int64_t> sent, consumed;  // [channel]: messages so far
};

auto Ready(const Wiring& w, const Simulation& sim, size_t p) -> bool {
  int64_t in = w.recv_channel[p][sim.next[p]];
  return in < 0 || sim.sent[static_cast<size_t>(in)] > sim.consumed[static_cast<size_t>(in)];
}

auto DeadlockError(const PipelineShape& s, const std::vector<std::vector<PipelineOp>>& ops, const Simulation& sim,
                   int64_t rounds) -> llvm::Error {
  std::string waits;
  int64_t stuck = 0;
  for (size_t p = 0; p < ops.size(); ++p) {
    if (sim.next[p] >= ops[p].size()) continue;
    if (++stuck > 4) continue;
    const PipelineOp& op = ops[p][sim.next[p]];
    OpLinks links = Neighbors(op, s.stages, static_cast<int64_t>(p), s.chunks);
    waits += fmt::format("; {} waits for {} from stage {}", At(static_cast<int64_t>(p), sim.next[p], op),
                         op.kind == OpKind::kForward ? "activations" : "a gradient", links.recv_from->stage);
  }
  if (stuck > 4) waits += fmt::format("; and {} more stages", stuck - 4);
  return Fail(fmt::format("the schedule deadlocks after {} rounds{}", rounds, waits));
}

// Lock-step rounds: readiness is decided on the state at the round's start, so
// a message sent in a round is consumed in a later one.
auto Simulate(const PipelineShape& s, const std::vector<std::vector<PipelineOp>>& ops, const Wiring& w,
              ScheduleCheck& out) -> llvm::Error {
  Simulation sim{std::vector<size_t>(ops.size(), 0), std::vector<int64_t>(w.keys.size(), 0),
                 std::vector<int64_t>(w.keys.size(), 0)};
  size_t left = 0;
  for (const auto& list : ops) left += list.size();
  std::vector<size_t> ready;
  while (left > 0) {
    ready.clear();
    for (size_t p = 0; p < ops.size(); ++p) {
      if (sim.next[p] < ops[p].size() && Ready(w, sim, p)) ready.push_back(p);
    }
    if (ready.empty()) return DeadlockError(s, ops, sim, out.rounds);
    for (size_t p : ready) {
      int64_t in = w.recv_channel[p][sim.next[p]], send = w.send_channel[p][sim.next[p]];
      if (in >= 0) ++sim.consumed[static_cast<size_t>(in)];
      if (send >= 0) ++sim.sent[static_cast<size_t>(send)];
      ++sim.next[p];
    }
    left -= ready.size();
    ++out.rounds;
    for (size_t c = 0; c < w.keys.size(); ++c) out.max_queued = std::max(out.max_queued, sim.sent[c] - sim.consumed[c]);
  }
  return llvm::Error::success();
}

}  // namespace

auto CheckSchedule(const PipelineShape& s, const std::vector<std::vector<PipelineOp>>& stages_ops)
    -> llvm::Expected<ScheduleCheck> {
  assert(!runtime::ShapeProblem(s));
  if (static_cast<int64_t>(stages_ops.size()) != s.stages) {
    return Fail(fmt::format("{} stage schedules for a pipeline of {} stages", stages_ops.size(), s.stages));
  }
  Wiring w;
  w.recv_channel.resize(stages_ops.size());
  w.send_channel.resize(stages_ops.size());
  for (int64_t p = 0; p < s.stages; ++p) {
    const auto& ops = stages_ops[static_cast<size_t>(p)];
    if (llvm::Error e = CheckStageOps(s, p, ops)) return e;
    WireStage(s, p, ops, w);
  }
  if (llvm::Error e = CheckChannelOrder(w)) return e;
  ScheduleCheck out;
  for (const auto& [pair, sent] : w.pair_sent) out.pair_ordered = out.pair_ordered && sent == w.pair_consumed[pair];
  if (llvm::Error e = Simulate(s, stages_ops, w, out)) return e;
  return out;
}

}  // namespace avf::parallel
