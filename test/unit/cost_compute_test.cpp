// The compute term of the time model (docs/planner.md, "Compute", "Uneven
// stages"): what a flash-attention kernel runs and how its rate falls with
// the machine balance, the memory-bound kernels at the HBM bandwidth (in
// fp32 under autocast), and the busiest stage of an uneven pipeline.
#include <cstdint>

#include <gtest/gtest.h>

#include "cost/counts.h"
#include "cost/predict.h"
#include "cost/shape.h"
#include "cost_test_util.h"

namespace avf::cost {
namespace {

using namespace test_shapes;  // NOLINT(google-build-using-namespace): the shared shapes

// FlashAttention: the causal half of the s x s products, forward 1 and
// backward 2.5 units (the scores rebuilt), at the attention rate; selective
// recomputation has nothing to rebuild; full recomputation one more forward.
TEST(CostTime, FlashAttentionCountsWhatTheKernelRuns) {
  ModelShape m = Gpt2_1558M();
  Workload w = Work(m, 1, 8);
  Hardware hw = Node8();
  hw.hbm_bandwidth = 0;
  Layout l = MakeLayout(1, 1, 1, 2);
  double rate = 312e12 * 0.65 * 1600.0 / (1600.0 + 256.0);
  double attention_rate = 312e12 * 0.5;
  double tokens = 8.0 * 1024.0;
  double core = 48.0 * 4.0 * 1024.0 * 1600.0;  // forward attention FLOPs per token, whole matrix
  double matmuls = ModelFlopsPerToken(m) - 3.0 * core;
  double flash = tokens * (matmuls / rate + (1.0 + 2.5) * (core / 2) / attention_rate);
  ExpectRel(PredictTime(w, l, hw, kPlain).compute, flash, 1e-12);
  l.recompute = Recompute::Selective;
  ExpectRel(PredictTime(w, l, hw, kPlain).compute, flash, 1e-12);
  l.recompute = Recompute::Full;
  ParamCounts c = CountParams(m);
  double blocks = 48.0 * 2.0 * D(c.layer_matmul) / rate + core / 2 / attention_rate;
  ExpectRel(PredictTime(w, l, hw, kPlain).compute, flash + tokens * blocks, 1e-12);
}

// Memory-bound kernels: elementwise_bytes x hidden per token and layer
// (forward and backward), and 16 bytes per token and vocabulary entry of the
// output layer, at the HBM bandwidth.
TEST(CostTime, MemoryBoundKernelsAtHbmBandwidth) {
  ModelShape m = Gpt2_1558M();
  Workload w = Work(m, 1, 8);
  Hardware hw = Node8();
  Layout l = MakeLayout(1, 1, 1, 8);
  hw.hbm_bandwidth = 0;
  double without = PredictTime(w, l, hw, kPlain).compute;
  hw.hbm_bandwidth = 2039e9;
  Calibration with = kPlain;
  with.elementwise_bytes = 120;
  double tokens = 8.0 * 1024.0;
  double bytes = tokens * (48.0 * 120.0 * 1600.0 + 16.0 * 50257.0);
  ExpectRel(PredictTime(w, l, hw, with).compute - without, bytes / 2039e9, 1e-9);
}

// Where autocast keeps the memory-bound kernels in fp32, a bf16 job moves
// twice their bytes; the output layer's (fp32 already) stay.
TEST(CostTime, Fp32ElementwiseDoublesTheMemoryBoundBytes) {
  Workload w = Work(Gpt2_1558M(), 1, 8);
  Hardware hw = Node8();
  hw.hbm_bandwidth = 2039e9;
  Layout l = MakeLayout(1, 1, 1, 8);
  Calibration with = kPlain;
  with.elementwise_bytes = 120;
  double bf16 = PredictTime(w, l, hw, with).compute;
  w.fp32_elementwise = true;
  double layers = 8.0 * 1024.0 * 48.0 * 120.0 * 1600.0;
  ExpectRel(PredictTime(w, l, hw, with).compute - bf16, layers / 2039e9, 1e-9);
}

// A flash kernel's fraction of the peak falls with the machine balance by
// its own exponent: at twice the A100's balance and exponent 1, the
// attention takes twice as long and nothing else changes.
TEST(CostTime, FlashAttentionRateFallsWithMachineBalance) {
  ModelShape m = Gpt2_1558M();
  Workload w = Work(m, 1, 8);
  Hardware hw = Node8();
  hw.hbm_bandwidth = 312e12 / (2 * kReferenceBalance);
  Layout l = MakeLayout(1, 1, 1, 2);
  double balanced = PredictTime(w, l, hw, kPlain).compute;
  Calibration steep = kPlain;
  steep.attention_balance_exponent = 1;
  double core = 48.0 * 4.0 * 1024.0 * 1600.0;
  double attention = 8.0 * 1024.0 * (1.0 + 2.5) * (core / 2) / (312e12 * 0.5);
  ExpectRel(PredictTime(w, l, hw, steep).compute - balanced, attention, 1e-9);
}

// ---- Uneven pipeline stages -----------------------------------------------------

// 126 layers on 16 stages split 7, 8 x 14, 7 (cost/stages.h). Under 1F1B the
// activation peak is stage 1 (8 layers x 15 micro-batches in flight = 120
// layer units) rather than stage 0 (7 x 16 = 112): 120/128 of the even
// 128-layer split's peak (8 x 16).
TEST(CostUneven, ActivationPeakIsTheBusiestStage) {
  ModelShape uneven = Llama3_405B();
  ModelShape even = uneven;
  even.layers = 128;
  Layout l = MakeLayout(1, 1, 16, 1);
  double a126 = PredictMemory(Work(uneven, 16, 64), l).activations;
  double a128 = PredictMemory(Work(even, 16, 64), l).activations;
  ExpectRel(a126, a128 * 120.0 / 128.0, 1e-12);
}

// A middle stage's 8 layers outweigh the last stage's 7 and the logits, so
// they set the pace: the even 128-layer split's last stage runs 8 layers and
// the logits, exactly the logits more per micro-batch.
TEST(CostUneven, MiddleStageSetsThePace) {
  ModelShape uneven = Llama3_405B();
  ModelShape even = uneven;
  even.layers = 128;
  Hardware hw = Node8();
  hw.hbm_bandwidth = 0;
  Layout l = MakeLayout(1, 1, 16, 1);
  double t126 = PredictTime(Work(uneven, 16, 64), l, hw, kPlain).compute;
  double t128 = PredictTime(Work(even, 16, 64), l, hw, kPlain).compute;
  double rate = 312e12 * 0.65 * 16384.0 / (16384.0 + 256.0);
  double logits = 64.0 * 8192.0 * 3.0 * 2.0 * 128256.0 * 16384.0 / rate;  // m x tokens x (fwd + bwd)
  ExpectRel(t128 - t126, logits, 1e-9);
}

}  // namespace
}  // namespace avf::cost
