// Pipeline schedules: the ordered compute ops of
// every pipeline stage for one optimizer step, the stage each op receives its
// input from and sends its output to, and a checker that simulates all stages
// together. The executor runs StageSchedule(...) of its own stage op by op;
// nothing here communicates or touches tensors.
//
// Terms. P pipeline stages, M micro-batches per step (training.
// micro_batches_per_step), V model chunks per stage (layout.virtual_stages
// with the interleaved schedule, else 1). Chunk c of stage p is virtual stage
// v = c·P + p (Megatron's interleaved assignment, plan-format.md "stages");
// a micro-batch's forward runs virtual stages 0, 1, …, P·V − 1 in turn and its
// backward the reverse.
//
// Schedules (runtime/README.md "Pipeline schedules"):
//  - one_f_one_b (PipeDream-flush, Megatron's forward_backward_pipelining_
//    without_interleaving): min(P − p − 1, M) warm-up forwards, then pairs of
//    one forward and one backward, then the remaining backwards; forwards and
//    backwards in ascending micro-batch order.
//  - interleaved (Megatron's forward_backward_pipelining_with_interleaving,
//    micro-batch groups of P): the k-th forward runs chunk (k mod P·V) / P
//    of micro-batch (k / (P·V))·P + k mod P, the k-th backward chunk
//    V − 1 − (k mod P·V) / P of the same micro-batch; min(2·(P − p − 1) +
//    (V − 1)·P, M·V) warm-up forwards, then 1F1B pairs, then the cool-down.
//    Needs M a multiple of P (as the compiler's planner does) and P > 1. With
//    V = 1 it is exactly one_f_one_b (the planner treats it so, too).
//  - gpipe: all M forwards, then all M backwards, both in ascending
//    micro-batch order. Autograd would naturally run the backwards in reverse;
//    ascending keeps every link's messages in the same order at both ends
//    (the invariant below) and holds the same M micro-batches.
//
// The invariant the executor relies on (CheckSchedule proves it for the
// schedules generated here): on every channel, i.e. stage a → stage b for
// one kind of message (activations forward, gradients backward), the order
// in which a sends equals the order in which b consumes, so FIFO links need
// no tags; and with sends that never block (buffered, or posted
// asynchronously) and receives that wait for their message, all stages run
// to the end: every op's input (the forward of the previous virtual stage of
// the same micro-batch; the backward of the next one) is produced before it
// is needed, with no cycle of waits. Both kinds of message between a pair of
// stages are consumed in sending order too (only P = 2 with interleaving sends
// both the same way), so one ordered stream per pair (Communicator::Send/Recv)
// needs no tags. A link holds at most one unconsumed message under 1F1B and
// GPipe, up to about P/2 under interleaving (ScheduleCheck::max_queued). A
// blocking, unbuffered Send in 1F1B's steady state would deadlock two
// neighbours that both send first: post sends asynchronously or use SendRecv.
// With equal op times every generated schedule takes 2·M·V + 2·(P − 1) op
// slots: interleaving cuts the bubble to (P − 1)/V of a stage's F + B.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "plan/cuts.h"
#include "plan/plan.h"

namespace avf::parallel {

using runtime::PipelineSchedule;

enum class OpKind : uint8_t { kForward, kBackward };

// One compute op of a stage: the forward or backward of `micro_batch`
// (0 … M − 1) through model chunk `chunk` (0 … V − 1) of this stage.
struct PipelineOp {
  OpKind kind = OpKind::kForward;
  int64_t micro_batch = 0;
  int64_t chunk = 0;
  friend auto operator==(const PipelineOp&, const PipelineOp&) -> bool = default;
};

// The shape every function below takes (plan/cuts.h), so callers cannot
// swap its integers. Every function here takes a shape that ShapeProblem
// accepts, as ValidatePlan has for a plan's, and a stage of it: it asserts
// that and checks nothing.
using runtime::PipelineShape;

// The three phases of one stage's op list: `warmup` forwards, `steady`
// (forward, backward) pairs, `cooldown` backwards. forwards = warmup +
// steady = M·V = steady + cooldown; GPipe is warmup = M, steady = 0.
struct StagePhases {
  int64_t warmup = 0, steady = 0, cooldown = 0;
};

auto Phases(const PipelineShape& shape, int64_t stage) -> StagePhases;

// The ordered compute ops of `stage` (0 … P − 1): 2·M·V ops.
auto StageSchedule(const PipelineShape& shape, int64_t stage) -> std::vector<PipelineOp>;

// Every stage's schedule, stage 0 first.
auto AllStageSchedules(const PipelineShape& shape) -> std::vector<std::vector<PipelineOp>>;

// A model chunk on some stage: the other end of a message.
struct ChunkRef {
  int64_t stage = 0, chunk = 0;
  friend auto operator==(const ChunkRef&, const ChunkRef&) -> bool = default;
};

// Where an op's input comes from and where its output goes. A forward
// receives the previous virtual stage's activations (none: virtual stage 0
// embeds the tokens) and sends to the next (none: the last virtual stage
// computes the loss). A backward receives the gradient of its output from the
// next virtual stage (none: it starts from the loss) and sends the gradient
// of its input to the previous one (none: the embedding ends it). With
// interleaving, chunk c of stage 0 receives from chunk c − 1 of stage P − 1.
struct OpLinks {
  std::optional<ChunkRef> recv_from, send_to;
};

auto Neighbors(const PipelineOp& op, int64_t stages, int64_t stage, int64_t chunks) -> OpLinks;

// Virtual stage c·P + p of chunk c of stage p, and back.
inline auto VirtualStage(int64_t stage, int64_t chunk, int64_t stages) -> int64_t { return chunk * stages + stage; }
inline auto ChunkOfVirtualStage(int64_t virtual_stage, int64_t stages) -> ChunkRef {
  return {virtual_stage % stages, virtual_stage / stages};
}

// The most chunk forwards of one stage whose backward has not run yet, over
// its op list: the activations the stage keeps at its peak, in units of one
// chunk (L / (P·V) layers; uneven stages differ by one) of one micro-batch.
// 1F1B: min(P − p, M); GPipe: M; interleaved: min(2·(P − p − 1) + (V − 1)·P
// + 1, M·V), i.e. on stage 0 with enough micro-batches P·V + P − 1 chunks =
// P·(1 + (P − 1)/(P·V)) micro-batches of L/P layers, the planner's
// interleave factor (docs/planner.md).
auto PeakInFlight(const std::vector<PipelineOp>& ops) -> int64_t;
auto PeakInFlight(const PipelineShape& shape, int64_t stage) -> int64_t;

// What CheckSchedule learnt by simulating the stages in lock-step rounds in
// which every stage whose next op has its input runs that op (each op one
// time unit; a message sent in a round is there in the next).
struct ScheduleCheck {
  int64_t rounds = 0;      // time units to the last op: 2·M·V plus the bubble
  int64_t max_queued = 0;  // most messages sent but not yet consumed on one channel at once
  // Both kinds of message between a pair of stages are consumed in sending
  // order too, so one ordered stream per pair suffices (only P = 2 with
  // interleaving carries both kinds on one pair; true for every generated
  // schedule).
  bool pair_ordered = true;
};

// Checks `stages_ops` (stage p's ops at index p, any lists: a schedule
// under test) for the shape: each stage
// runs every (micro-batch, chunk) forward once and backward once, backward
// after forward; every channel's send order equals its receive order; the
// simulation, with unbounded send buffers, ends with every op run. An error
// names the stage, the op and what is wrong (for a deadlock, what each
// stuck stage waits for).
auto CheckSchedule(const PipelineShape& shape, const std::vector<std::vector<PipelineOp>>& stages_ops)
    -> llvm::Expected<ScheduleCheck>;

// Prints every stage's schedule of `plan` as tables (what `avf-run --plan p.json
// --print-schedule` shows): a summary, then per stage the layers of each
// chunk, the phase counts, the peak in flight and one line per op. An error,
// prefixed with `name` (the plan's file), only if the generated schedule
// failed CheckSchedule (a bug here, not in the plan); nothing is printed then.
auto PrintSchedule(const runtime::ValidPlan& plan, llvm::raw_ostream& os, llvm::StringRef name = "plan.json")
    -> llvm::Error;

// "F" or "B", and "F mb 3 chunk 1" for messages.
auto Name(OpKind kind) -> llvm::StringRef;
auto Describe(const PipelineOp& op) -> std::string;

}  // namespace avf::parallel
