// Pipeline schedules (runtime/parallel/schedule.h): each kind against tables
// written by hand from the rules (Megatron's 1F1B and interleaved 1F1B,
// GPipe), the neighbours of ops, peak activations, the simulator over every
// (P, V, M) in a grid and on broken schedules, and the printed table.
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "parallel/schedule.h"
#include "plan_builder.h"

namespace avf::parallel {
namespace {

using K = PipelineSchedule;

// "F0 F1 B0" (chunk 0) or "F0.1 B2.0" (micro-batch.chunk) to ops.
auto Ops(const std::string& text) -> std::vector<PipelineOp> {
  std::vector<PipelineOp> ops;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    PipelineOp op;
    op.kind = word[0] == 'F' ? OpKind::kForward : OpKind::kBackward;
    size_t dot = word.find('.');
    op.micro_batch = std::stoll(word.substr(1, dot - 1));
    op.chunk = dot == std::string::npos ? 0 : std::stoll(word.substr(dot + 1));
    ops.push_back(op);
  }
  return ops;
}

// Ops back to the table's notation, so a failure shows both tables.
auto Text(const std::vector<PipelineOp>& ops, bool chunks) -> std::string {
  std::string out;
  for (const PipelineOp& op : ops) {
    if (!out.empty()) out += ' ';
    out += (op.kind == OpKind::kForward ? "F" : "B") + std::to_string(op.micro_batch);
    if (chunks) out += "." + std::to_string(op.chunk);
  }
  return out;
}

auto Schedule(K kind, int64_t P, int64_t p, int64_t M, int64_t V) -> std::string {
  return Text(StageSchedule({kind, P, M, V}, p), V > 1);
}

// What ShapeProblem (plan/cuts.h, the rule ValidatePlan applies to a plan's
// shape) says of a shape no schedule here runs.
auto ErrorOf(K kind, int64_t P, int64_t M, int64_t V) -> std::string {
  return runtime::ShapeProblem({kind, P, M, V}).value_or("no error");
}

// --- Hand-written tables -------------------------------------------------

// P = 4, M = 8: warm-up P - p - 1 forwards, then F/B pairs, then the rest.
TEST(OneFOneB, FourStagesEightMicroBatches) {
  EXPECT_EQ(Schedule(K::OneFOneB, 4, 0, 8, 1), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(Schedule(K::OneFOneB, 4, 1, 8, 1), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(Schedule(K::OneFOneB, 4, 2, 8, 1), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  EXPECT_EQ(Schedule(K::OneFOneB, 4, 3, 8, 1), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
}

// Fewer micro-batches than stages: the warm-up is capped at M.
TEST(OneFOneB, FewerMicroBatchesThanStages) {
  EXPECT_EQ(Schedule(K::OneFOneB, 4, 0, 2, 1), "F0 F1 B0 B1");
  EXPECT_EQ(Schedule(K::OneFOneB, 4, 1, 2, 1), "F0 F1 B0 B1");
  EXPECT_EQ(Schedule(K::OneFOneB, 4, 2, 2, 1), "F0 F1 B0 B1");
  EXPECT_EQ(Schedule(K::OneFOneB, 4, 3, 2, 1), "F0 B0 F1 B1");
  EXPECT_EQ(Schedule(K::OneFOneB, 1, 0, 3, 1), "F0 B0 F1 B1 F2 B2");
}

// P = 2, V = 2, M = 4. Forward k: chunk (k mod 4) / 2, micro-batch
// (k / 4)·2 + k mod 2: 0.0 1.0 0.1 1.1 2.0 3.0 2.1 3.1; backward k the same
// micro-batches with chunk 1 - (k mod 4) / 2: 0.1 1.1 0.0 1.0 2.1 3.1 2.0 3.0.
// Warm-up: stage 0 2·1 + 1·2 = 4, stage 1 0 + 2 = 2.
TEST(Interleaved, TwoStagesTwoChunksFourMicroBatches) {
  EXPECT_EQ(Schedule(K::Interleaved, 2, 0, 4, 2),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(Schedule(K::Interleaved, 2, 1, 4, 2),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
}

// P = 4, V = 2, M = 4: stage 0's warm-up 2·3 + 4 = 10 exceeds the 8 forwards,
// so it runs every forward first; stage 3 warms up with 4.
TEST(Interleaved, FourStagesWarmupCapped) {
  EXPECT_EQ(Schedule(K::Interleaved, 4, 0, 4, 2),
            "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0");
  EXPECT_EQ(Schedule(K::Interleaved, 4, 3, 4, 2),
            "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 B0.0 B1.0 B2.0 B3.0");
}

// One chunk under `interleaved` is plain 1F1B (and needs no M mod P).
TEST(Interleaved, OneChunkIsOneFOneB) {
  for (int64_t P = 1; P <= 5; ++P) {
    for (int64_t M = 1; M <= 7; ++M) {
      for (int64_t p = 0; p < P; ++p) {
        EXPECT_EQ(Schedule(K::Interleaved, P, p, M, 1), Schedule(K::OneFOneB, P, p, M, 1)) << P << " " << M;
      }
    }
  }
}

TEST(Gpipe, AllForwardsThenAllBackwards) {
  EXPECT_EQ(Schedule(K::Gpipe, 2, 0, 3, 1), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(Schedule(K::Gpipe, 2, 1, 3, 1), "F0 F1 F2 B0 B1 B2");
}

TEST(Phases, CountsOfEachPhase) {
  StagePhases one = Phases({K::OneFOneB, 4, 8, 1}, 1);
  EXPECT_EQ(one.warmup, 2);
  EXPECT_EQ(one.steady, 6);
  EXPECT_EQ(one.cooldown, 2);
  StagePhases inter = Phases({K::Interleaved, 2, 4, 2}, 0);
  EXPECT_EQ(inter.warmup, 4);
  EXPECT_EQ(inter.steady, 4);
  EXPECT_EQ(inter.cooldown, 4);
  StagePhases gpipe = Phases({K::Gpipe, 3, 5, 1}, 2);
  EXPECT_EQ(gpipe.warmup, 5);
  EXPECT_EQ(gpipe.steady, 0);
  EXPECT_EQ(gpipe.cooldown, 5);
}

// --- Errors -----------------------------------------------------------------

TEST(ScheduleShapes, WhatNoScheduleRuns) {
  EXPECT_EQ(ErrorOf(K::OneFOneB, 0, 4, 1), "a pipeline needs at least 1 stage, not 0");
  EXPECT_EQ(ErrorOf(K::OneFOneB, 2, 0, 1), "a step needs at least 1 micro-batch, not 0");
  EXPECT_EQ(ErrorOf(K::Interleaved, 2, 4, 0), "a stage needs at least 1 model chunk, not 0");
  EXPECT_EQ(ErrorOf(K::OneFOneB, 2, 4, 2),
            "2 model chunks per stage need the interleaved schedule; one_f_one_b runs one chunk per stage");
  EXPECT_EQ(ErrorOf(K::Gpipe, 2, 4, 3),
            "3 model chunks per stage need the interleaved schedule; gpipe runs one chunk per stage");
  EXPECT_EQ(ErrorOf(K::Interleaved, 1, 4, 2),
            "the interleaved schedule with 2 model chunks needs more than one pipeline stage");
  EXPECT_EQ(ErrorOf(K::Interleaved, 4, 6, 2),
            "the interleaved schedule needs the micro-batches per step to be a multiple of the pipeline stages (it "
            "runs them in groups of P), but M = 6 and P = 4");
  EXPECT_EQ(ErrorOf(K::Interleaved, 4, 6, 1), "no error");  // one chunk: 1F1B, no groups of P
  EXPECT_NE(ErrorOf(K::Interleaved, 2, int64_t{1} << 20, 4).find("exceed what a schedule may hold"), std::string::npos);
  EXPECT_NE(ErrorOf(K::OneFOneB, 2, int64_t{1} << 62, 1).find("exceed"), std::string::npos);
}

// --- Neighbours -------------------------------------------------------------

TEST(Neighbors, PlainPipeline) {
  OpLinks f0 = Neighbors({OpKind::kForward, 3, 0}, 4, 0, 1);
  EXPECT_FALSE(f0.recv_from.has_value());
  EXPECT_EQ(f0.send_to, (ChunkRef{1, 0}));
  OpLinks f3 = Neighbors({OpKind::kForward, 3, 0}, 4, 3, 1);
  EXPECT_EQ(f3.recv_from, (ChunkRef{2, 0}));
  EXPECT_FALSE(f3.send_to.has_value());
  OpLinks b3 = Neighbors({OpKind::kBackward, 3, 0}, 4, 3, 1);
  EXPECT_FALSE(b3.recv_from.has_value());
  EXPECT_EQ(b3.send_to, (ChunkRef{2, 0}));
  OpLinks b0 = Neighbors({OpKind::kBackward, 3, 0}, 4, 0, 1);
  EXPECT_EQ(b0.recv_from, (ChunkRef{1, 0}));
  EXPECT_FALSE(b0.send_to.has_value());
  OpLinks single = Neighbors({OpKind::kForward, 0, 0}, 1, 0, 1);
  EXPECT_FALSE(single.recv_from || single.send_to);
}

// P = 4, V = 2: chunk 1 of stage 0 (virtual stage 4) follows chunk 0 of stage 3.
TEST(Neighbors, InterleavedWrapsAround) {
  OpLinks f = Neighbors({OpKind::kForward, 0, 1}, 4, 0, 2);
  EXPECT_EQ(f.recv_from, (ChunkRef{3, 0}));
  EXPECT_EQ(f.send_to, (ChunkRef{1, 1}));
  OpLinks b = Neighbors({OpKind::kBackward, 0, 1}, 4, 0, 2);
  EXPECT_EQ(b.recv_from, (ChunkRef{1, 1}));
  EXPECT_EQ(b.send_to, (ChunkRef{3, 0}));
  OpLinks wrap = Neighbors({OpKind::kForward, 0, 0}, 4, 3, 2);
  EXPECT_EQ(wrap.send_to, (ChunkRef{0, 1}));
  OpLinks last = Neighbors({OpKind::kForward, 0, 1}, 4, 3, 2);
  EXPECT_FALSE(last.send_to.has_value());
  EXPECT_EQ(VirtualStage(2, 1, 4), 6);
  EXPECT_EQ(ChunkOfVirtualStage(6, 4), (ChunkRef{2, 1}));
}

// --- Peak activations --------------------------------------------------------

TEST(PeakInFlight, MatchesTheMemoryModel) {
  for (int64_t P = 1; P <= 8; ++P) {
    for (int64_t M = 1; M <= 16; ++M) {
      for (int64_t p = 0; p < P; ++p) {
        EXPECT_EQ(PeakInFlight({K::OneFOneB, P, M, 1}, p), std::min(P - p, M)) << P << " " << p << " " << M;
        EXPECT_EQ(PeakInFlight({K::Gpipe, P, M, 1}, p), M);
      }
    }
  }
  for (int64_t P = 2; P <= 8; ++P) {
    for (int64_t V = 2; V <= 4; ++V) {
      for (int64_t M = P; M <= 16; M += P) {
        for (int64_t p = 0; p < P; ++p) {
          int64_t warmup = 2 * (P - p - 1) + (V - 1) * P;
          EXPECT_EQ(PeakInFlight({K::Interleaved, P, M, V}, p), std::min(warmup + 1, M * V));
        }
      }
    }
  }
  // Stage 0 with enough micro-batches: P·V + P - 1 chunks, i.e. the planner's
  // min(p, m)·(1 + (p - 1)/(p·v)) micro-batches of L/p layers times V.
  EXPECT_EQ(PeakInFlight({K::Interleaved, 4, 16, 2}, 0), 4 * 2 + 3);
  EXPECT_EQ(PeakInFlight(Ops("F0 F1 B0 F2 B1 B2")), 2);
  EXPECT_EQ(PeakInFlight(std::vector<PipelineOp>{}), 0);
}

// --- The simulator ------------------------------------------------------------

auto Check(const PipelineShape& s) -> llvm::Expected<ScheduleCheck> { return CheckSchedule(s, AllStageSchedules(s)); }

// Every kind over the grid: no deadlock, every op once, FIFO order on every
// channel and on every pair of stages, and the lock-step makespan is the
// 2·M·V ops of a stage plus a bubble of 2·(P - 1) op slots (fill and drain).
// With V chunks an op is a chunk's: the bubble shrinks to (P - 1)/V of a
// whole stage's forward and backward (Narayanan et al. 2021, §2.2).
TEST(CheckSchedule, EveryKindOverTheGrid) {
  int64_t checked = 0;
  for (K kind : {K::OneFOneB, K::Gpipe, K::Interleaved}) {
    for (int64_t P = 1; P <= 8; ++P) {
      for (int64_t V = 1; V <= 4; ++V) {
        for (int64_t M = 1; M <= 16; ++M) {
          PipelineShape s{kind, P, M, V};
          if (runtime::ShapeProblem(s)) continue;
          auto c = Check(s);
          ASSERT_TRUE(static_cast<bool>(c)) << runtime::Name(kind).str() << " P=" << P << " V=" << V << " M=" << M
                                            << ": " << llvm::toString(c.takeError());
          EXPECT_EQ(c->rounds, 2 * M * V + 2 * (P - 1))
              << runtime::Name(kind).str() << " " << P << " " << V << " " << M;
          EXPECT_TRUE(c->pair_ordered);
          EXPECT_LE(c->max_queued, V == 1 ? 1 : P);
          ++checked;
        }
      }
    }
  }
  // 1F1B and GPipe: 8 x 16 each; interleaved: 8 x 16 with V = 1, and with
  // V = 2..4 the multiples of P up to 16 for P = 2..8 (8+5+4+3+2+2+2 = 26 each).
  EXPECT_EQ(checked, 128 + 128 + 128 + 3 * 26);
}

// P = 2 with interleaving sends activations and gradients on the same pair
// (0 -> 1: chunk 0's activations and chunk 1's gradients): they too arrive in
// the order they are consumed, so one ordered stream per pair suffices.
// Interleaving buffers more messages per link than 1F1B's one.
TEST(CheckSchedule, QueuesAndPairOrder) {
  auto inter = Check({K::Interleaved, 2, 4, 2});
  ASSERT_TRUE(static_cast<bool>(inter));
  EXPECT_TRUE(inter->pair_ordered);
  EXPECT_EQ(inter->max_queued, 2);
  EXPECT_EQ(inter->rounds, 18);
  auto plain = Check({K::OneFOneB, 4, 8, 1});
  ASSERT_TRUE(static_cast<bool>(plain));
  EXPECT_EQ(plain->max_queued, 1);
  EXPECT_EQ(plain->rounds, 22);
  auto wide = Check({K::Interleaved, 8, 16, 4});
  ASSERT_TRUE(static_cast<bool>(wide));
  EXPECT_EQ(wide->max_queued, 4);
}

auto CheckError(const PipelineShape& s, const std::vector<std::string>& stages) -> std::string {
  std::vector<std::vector<PipelineOp>> ops;
  for (const std::string& t : stages) ops.push_back(Ops(t));
  auto c = CheckSchedule(s, ops);
  if (c) return "no error";
  return llvm::toString(c.takeError());
}

TEST(CheckSchedule, FindsBrokenSchedules) {
  PipelineShape s{K::OneFOneB, 2, 2, 1};
  EXPECT_EQ(CheckError(s, {"F0 B0 F1 B1", "F0 F1 B0 B1"}),
            "the schedule deadlocks after 2 rounds; stage 0, op 2 (B mb 0 chunk 0) waits for a gradient from stage 1; "
            "stage 1, op 2 (F mb 1 chunk 0) waits for activations from stage 0");
  EXPECT_EQ(CheckError(s, {"F1 F0 B0 B1", "F0 B0 F1 B1"}),
            "stage 0 sends the activations of micro-batch 1 for chunk 0 as message #1 to stage 1, but stage 1 expects "
            "the activations of micro-batch 0 for chunk 0 as message #1 (a link delivers in send order)");
  EXPECT_EQ(CheckError(s, {"F0 F1 B0 B1", "F0 B0 F1"}), "stage 1 never runs the backward of micro-batch 1, chunk 0");
  EXPECT_EQ(CheckError(s, {"F0 F0 B0 B1", "F0 B0 F1 B1"}), "stage 0, op 2 (F mb 0 chunk 0): a second forward");
  EXPECT_EQ(CheckError(s, {"B0 F0 F1 B1", "F0 B0 F1 B1"}),
            "stage 0, op 1 (B mb 0 chunk 0): a backward before its forward");
  EXPECT_EQ(CheckError(s, {"F0 F1 B0 B0", "F0 B0 F1 B1"}), "stage 0, op 4 (B mb 0 chunk 0): a second backward");
  EXPECT_EQ(CheckError(s, {"F0 F2 B0 B1", "F0 B0 F1 B1"}),
            "stage 0, op 2 (F mb 2 chunk 0): outside micro-batches 0..1 and chunks 0..0");
  EXPECT_EQ(CheckError(s, {"F0 F1 B0 B1"}), "1 stage schedules for a pipeline of 2 stages");
}

// Interleaved stages swapped between the two chunks' orders still run every
// op once; the checker catches the order on the wrap-around link.
TEST(CheckSchedule, InterleavedChunkOrderMatters) {
  PipelineShape s{K::Interleaved, 2, 2, 2};
  std::vector<std::vector<PipelineOp>> all = AllStageSchedules(s);
  EXPECT_EQ(Text(all[0], true), "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
  EXPECT_EQ(Text(all[1], true), "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 B0.0 B1.0");
  EXPECT_EQ(CheckError(s, {"F0.0 F1.0 F1.1 F0.1 B0.1 B1.1 B0.0 B1.0", Text(all[1], true)}),
            "stage 0 sends the activations of micro-batch 1 for chunk 1 as message #3 to stage 1, but stage 1 expects "
            "the activations of micro-batch 0 for chunk 1 as message #3 (a link delivers in send order)");
}

// --- The printed table ----------------------------------------------------------

TEST(PrintSchedule, Table) {
  std::string text;
  llvm::raw_string_ostream os(text);
  testing::PlanShape shape{.pipeline = 2, .micro_batches = 2};
  shape.model.layers = 4;
  ASSERT_FALSE(static_cast<bool>(PrintSchedule(testing::MakeValidPlan(shape), os)));
  os.flush();
  EXPECT_EQ(text,
            "job `made`: one_f_one_b schedule, 2 pipeline stages, 1 model chunk per stage, 2 micro-batches per step\n"
            "F forward, B backward; recv: where the input comes from (data: the tokens; loss: the last virtual stage's "
            "own loss); send: where the output goes; peak in flight: the most forwards whose backward is still to run\n"
            "simulated with equal op times: 6 slots per step, 4 busy on every stage (bubble 2); at most 1 message "
            "queued on one link\n"
            "\n"
            "stage 0: chunk 0 = layers 0-1 (embedding)\n"
            "  warm-up 1 forward, steady 1 forward+backward pair, cool-down 1 backward; peak in flight 2\n"
            "      #  op    mb  chunk  layers     recv              send\n"
            "      1  F      0      0  0-1        data              stage 1\n"
            "      2  F      1      0  0-1        data              stage 1\n"
            "      3  B      0      0  0-1        stage 1           -\n"
            "      4  B      1      0  0-1        stage 1           -\n"
            "\n"
            "stage 1: chunk 0 = layers 2-3 (output)\n"
            "  warm-up 0 forwards, steady 2 forward+backward pairs, cool-down 0 backwards; peak in flight 1\n"
            "      #  op    mb  chunk  layers     recv              send\n"
            "      1  F      0      0  2-3        stage 0           loss\n"
            "      2  B      0      0  2-3        loss              stage 0\n"
            "      3  F      1      0  2-3        stage 0           loss\n"
            "      4  B      1      0  2-3        loss              stage 0\n");
}

}  // namespace
}  // namespace avf::parallel
