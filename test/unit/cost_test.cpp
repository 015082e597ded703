// Tests for compiler/cost: parameter and FLOP counts against published
// figures, memory per GPU against the ZeRO and Korthikanti formulas, and the
// time model's collectives, bubble and overlap (docs/planner.md has every
// formula with its source). Expected values are written out here from the
// literature, never recomputed through the functions under test.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "cost/counts.h"
#include "cost/predict.h"
#include "cost/shape.h"
#include "cost_test_util.h"

namespace avf::cost {
namespace {

using namespace test_shapes;  // NOLINT(google-build-using-namespace): the shared shapes

// ---- Parameters ---------------------------------------------------------------
// Published totals: the `safetensors.total` parameter count of each reference
// Hugging Face checkpoint (openai-community/gpt2, gpt2-xl, meta-llama/...), which
// includes embeddings, norms and biases (GPT-2 counts its tied head once).

TEST(CostParams, Gpt2_124M) {
  ParamCounts c = CountParams(Gpt2_124M());
  EXPECT_EQ(c.total, 124439808);
  EXPECT_EQ(c.embedding, 50257 * 768);
  EXPECT_EQ(c.positions, 1024 * 768);
  EXPECT_EQ(c.output, 0);  // tied
  EXPECT_EQ(c.final_norm, 2 * 768);
  // 12 h^2 of weights, 13 h of biases and LayerNorms per block (ffn = 4h).
  EXPECT_EQ(c.per_layer, 12 * 768 * 768 + 13 * 768);
}

TEST(CostParams, Gpt2_1558M) { EXPECT_EQ(CountParams(Gpt2_1558M()).total, 1557611200); }

TEST(CostParams, Llama2_7B) {
  ParamCounts c = CountParams(Llama2_7B());
  EXPECT_EQ(c.total, 6738415616);
  EXPECT_EQ(c.positions, 0);          // RoPE: no learned positions
  EXPECT_EQ(c.output, 32000 * 4096);  // untied output layer
  EXPECT_EQ(c.final_norm, 4096);      // RMSNorm: weight only
}

TEST(CostParams, Llama2_13B) { EXPECT_EQ(CountParams(Llama2_13B()).total, 13015864320); }

TEST(CostParams, Llama3_8B) {
  ParamCounts c = CountParams(Llama3_8B());
  EXPECT_EQ(c.total, 8030261248);
  // GQA: k and v are 8 x 128 = 1024 wide.
  EXPECT_EQ(c.layer_matmul, 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336);
}

TEST(CostParams, Llama2_70B) {
  int64_t total = CountParams(Llama2_70B()).total;
  EXPECT_EQ(total, 68976648192);
  ExpectRel(D(total), 68.98e9, 1e-3);
}

TEST(CostParams, Llama3_70B) {
  int64_t total = CountParams(Llama3_70B()).total;
  EXPECT_EQ(total, 70553706496);
  ExpectRel(D(total), 70.55e9, 1e-3);
}

TEST(CostParams, Llama3_405B) { EXPECT_EQ(CountParams(Llama3_405B()).total, 405853388800); }

TEST(CostParams, TyingRemovesTheOutputMatrix) {
  ModelShape tied = Gpt2_124M();
  ModelShape untied = tied;
  untied.tied_embeddings = false;
  EXPECT_EQ(CountParams(untied).total - CountParams(tied).total, 50257 * 768);
}

TEST(CostParams, NarrowerKeyValueHeadsShrinkOnlyKAndV) {
  ModelShape mha = Llama2_70B();
  mha.kv_heads = mha.heads;
  // k and v go from 8192 to 1024 columns: 2 x 8192 x 7168 fewer per layer.
  EXPECT_EQ(CountParams(mha).per_layer - CountParams(Llama2_70B()).per_layer, 2 * 8192 * 7168);
}

TEST(CostParams, DefaultFfn) {
  EXPECT_EQ(DefaultFfn(Arch::Gpt2, 768), 3072);
  // 8h/3 rounded up to a multiple of 256: Llama 2 7B and 13B's published widths.
  EXPECT_EQ(DefaultFfn(Arch::Llama, 4096), 11008);
  EXPECT_EQ(DefaultFfn(Arch::Llama, 5120), 13824);
}

// ---- FLOPs --------------------------------------------------------------------

// Narayanan et al. 2021 without recomputation (Megatron's
// num_floating_point_operations with g = a): 72 B s l h^2 (1 + s/6h + V/12lh)
// per iteration, for a GPT with ffn = 4h.
auto Megatron72(const ModelShape& m, double batch) -> double {
  double l = D(m.layers), h = D(m.hidden), s = D(m.seq_len), v = D(m.vocab);
  return 72.0 * batch * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
}

TEST(CostFlops, MatchesMegatron72ForGpt) {
  const ModelShape shapes[] = {Gpt2_124M(), Gpt2_1558M(), Gpt(24, 2304, 24, 51200, 2048),
                               Gpt(96, 12288, 96, 51200, 2048), Gpt(128, 25600, 160, 51200, 2048)};
  for (const ModelShape& m : shapes) {
    double batch = 512;
    double tokens = batch * D(m.seq_len);
    ExpectRel(ModelFlopsPerToken(m) * tokens, Megatron72(m, batch), 1e-12);
  }
}

// Megatron-Core (r0.8.0) general form, per token:
// 12 L h^2 [(1 + g/a + s/h) + (ffn/h) * 3/2 + V/(2 L h)] for a SwiGLU model
// whose query projection is h wide.
TEST(CostFlops, MatchesMegatronCoreForLlama) {
  for (const ModelShape& m : {Llama3_8B(), Llama3_70B(), Llama2_7B(), Llama3_405B()}) {
    double l = D(m.layers), h = D(m.hidden), s = D(m.seq_len), v = D(m.vocab);
    double g = D(m.kv_heads), a = D(m.heads), f = D(m.ffn);
    double expected = 12.0 * l * h * h * ((1.0 + g / a + s / h) + (f / h) * 1.5 + v / (2.0 * l * h));
    ExpectRel(ModelFlopsPerToken(m), expected, 1e-12);
  }
}

TEST(CostFlops, ForwardIsOneThird) {
  ModelShape m = Llama3_8B();
  ExpectRel(ForwardFlopsPerToken(m) * 3.0, ModelFlopsPerToken(m), 1e-15);
}

TEST(CostFlops, AttentionCountsTheFullScoreMatrix) {
  ModelShape m = Gpt2_124M();
  // QK^T 2 s h + AV 2 s h per token and layer; no causal halving.
  EXPECT_DOUBLE_EQ(AttentionFlopsPerTokenLayer(m), 4.0 * 1024 * 768);
}

// ---- Memory: model states -----------------------------------------------------

// Megatron's GPT-7.5B (Narayanan Table 1): 36 layers of 4096, 51,200 vocab,
// 2048 positions, tied; 7.468e9 parameters, 0.4% from ZeRO's Psi = 7.5B.
auto Gpt7_5B() -> ModelShape { return Gpt(36, 4096, 32, 51200, 2048); }

auto ModelStates(const MemoryBreakdown& m) -> double { return m.weights + m.gradients + m.optimizer; }

TEST(CostMemory, ZeroWorkedExample) {
  Workload w = Work(Gpt7_5B(), 64, 64);
  ExpectRel(D(CountParams(w.model).total), 7.5e9, 0.005);
  // Rajbhandari et al. 2020 with Psi = 7.5B, N_d = 64, K = 12: 120 GB,
  // 31.4 GB, 16.6 GB and 1.875 GB (quoted as 1.9 GB).
  const double expected[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
  for (int zero = 0; zero <= 3; ++zero) {
    Layout l = MakeLayout(64, 1, 1, 1);
    l.zero = zero;
    ExpectRel(ModelStates(PredictMemory(w, l)), expected[zero], 0.01);
  }
}

TEST(CostMemory, ZeroStagesFollowThePaperExactly) {
  Workload w = Work(Gpt7_5B(), 64, 64);
  double psi = D(CountParams(w.model).total);
  double nd = 64;
  const double bytes[] = {16.0 * psi, 4.0 * psi + 12.0 * psi / nd, 2.0 * psi + 14.0 * psi / nd, 16.0 * psi / nd};
  for (int zero = 0; zero <= 3; ++zero) {
    Layout l = MakeLayout(64, 1, 1, 1);
    l.zero = zero;
    MemoryBreakdown m = PredictMemory(w, l);
    ExpectRel(ModelStates(m), bytes[zero], 1e-12);
  }
  Layout l = MakeLayout(64, 1, 1, 1);
  MemoryBreakdown m = PredictMemory(w, l);
  ExpectRel(m.weights, 2.0 * psi, 1e-12);
  ExpectRel(m.gradients, 2.0 * psi, 1e-12);
  ExpectRel(m.optimizer, 12.0 * psi, 1e-12);
}

// A measured anchor: llm.c PR #309 trains GPT-2 1558M on 4 GPUs; ZeRO-1
// lowers the peak from 35,975 MiB to 22,601 MiB. Sharding the fp32 master
// copy and both AdamW moments 4 ways saves 12 x 3/4 = 9 bytes per parameter.
TEST(CostMemory, LlmcZeroOneDelta) {
  Workload w = Work(Gpt2_1558M(), 4, 16);
  Layout l = MakeLayout(4, 1, 1, 4);
  double zero0 = PredictMemory(w, l).total();
  l.zero = 1;
  double zero1 = PredictMemory(w, l).total();
  ExpectRel(zero0 - zero1, (35975.0 - 22601.0) * 1024 * 1024, 0.01);
}

TEST(CostMemory, PrecisionAndOptimizer) {
  Workload w = Work(Gpt7_5B(), 1, 1);
  double psi = D(CountParams(w.model).total);
  Layout l = MakeLayout(1, 1, 1, 1);
  w.precision = Precision::Fp32;  // no master copy: 4 + 4 + 8
  ExpectRel(ModelStates(PredictMemory(w, l)), 16.0 * psi, 1e-12);
  w.precision = Precision::Bf16;
  w.optimizer = OptimizerKind::Sgd;  // 2 + 2 + master 4 + momentum 4
  ExpectRel(ModelStates(PredictMemory(w, l)), 12.0 * psi, 1e-12);
}

TEST(CostMemory, ZeroIsMonotone) {
  for (const ModelShape& m : {Gpt7_5B(), Llama3_8B(), Llama2_70B()}) {
    for (int64_t data : {1, 2, 8, 64}) {
      Workload w = Work(m, data * 8, data * 8);
      double previous = 0;
      for (int zero = 0; zero <= 3; ++zero) {
        Layout l = MakeLayout(data, 8, 1, 1);
        l.zero = zero;
        MemoryBreakdown mem = PredictMemory(w, l);
        if (zero > 0) {
          EXPECT_LE(mem.total(), previous) << "zero " << zero << " data " << data;
        }
        previous = mem.total();
      }
    }
  }
}

TEST(CostMemory, ParamsPerGpuSplitsOverTensorAndPipeline) {
  ModelShape m = Llama2_7B();
  ParamCounts c = CountParams(m);
  // One stage, eight tensor ranks: the RMSNorm weights (2h per layer and the
  // final h) stay whole on every rank, the rest / 8 — 842,534,912, Megatron's
  // count for one tensor rank of Llama 2 7B before vocabulary padding.
  double whole = 32.0 * 2 * 4096 + 4096;
  ExpectRel(ParamsPerGpu(m, MakeLayout(1, 8, 1, 1)), (D(c.total) - whole) / 8.0 + whole, 1e-12);
  EXPECT_EQ(ParamsPerGpu(m, MakeLayout(1, 8, 1, 1)), 842534912.0);
  // Four stages: the first holds 8 layers + the embedding; the last 8 layers,
  // the final norm and the untied output (the same size): first and last tie
  // except for the norm, so the last is the larger.
  double last = 8.0 * D(c.per_layer) + D(c.final_norm) + D(c.output);
  ExpectRel(ParamsPerGpu(m, MakeLayout(1, 1, 4, 1)), last, 1e-12);
}

TEST(CostMemory, CommunicationBuffers) {
  Workload w = Work(Llama3_8B(), 64, 64);
  const double mib256 = 256.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(PredictMemory(w, MakeLayout(1, 1, 1, 1)).buffers, 0.0);
  EXPECT_DOUBLE_EQ(PredictMemory(w, MakeLayout(8, 8, 1, 1)).buffers, 2 * mib256);
  EXPECT_DOUBLE_EQ(PredictMemory(w, MakeLayout(4, 8, 2, 1)).buffers, 3 * mib256);
  // ZeRO-3 adds the layer being computed and the prefetched one, gathered.
  Layout z3 = MakeLayout(8, 8, 1, 1);
  z3.zero = 3;
  double layer = D(CountParams(w.model).per_layer) / 8.0 * 2.0;
  ExpectRel(PredictMemory(w, z3).buffers, 2 * mib256 + 2.0 * layer, 1e-12);
}

// ---- Memory: activations (Korthikanti et al. 2022, Table 2) -------------------

struct ActCase {
  ModelShape m;
  Workload w;
  double sbh = 0;
  double logits = 0;  // Megatron: 4 s b h (1 + V/h), vocab-parallel over t
};

auto Act(const ModelShape& m, int64_t micro_batch, int64_t t) -> ActCase {
  ActCase c;
  c.m = m;
  c.w = Work(m, t, micro_batch);
  c.w.attention = Attention::Materialized;  // Korthikanti's attention core
  c.sbh = D(m.seq_len) * D(micro_batch) * D(m.hidden);
  c.logits = 4.0 * c.sbh * (1.0 + D(m.vocab) / D(m.hidden)) / D(t);
  return c;
}

// One stage, one micro-batch in flight: activations = L x per-layer + logits.
auto Activations(const ActCase& c, int64_t t, Recompute rc, bool sp) -> double {
  Layout l = MakeLayout(1, t, 1, c.w.global_batch);
  l.recompute = rc;
  l.sequence_parallel = sp;
  return PredictMemory(c.w, l).activations;
}

// Korthikanti et al. 2022, Table 2, without its dropout terms (aviflow jobs
// train without dropout): the two dropout masks (2 sbh) leave the 34 and the
// 10, and the softmax-dropout mask and output (3 a s^2 b) the attention core,
// so 34 -> 32, 10 -> 8 and 5 as/h -> 2 as/h.
TEST(CostActivations, KorthikantiTable2WithoutDropout) {
  ModelShape m = Gpt(24, 2048, 16, 51200, 2048);  // ffn = 4h
  ActCase c = Act(m, 4, 8);
  double t = 8, a = 16, s = 2048, h = 2048, L = 24;
  double sbh = c.sbh;
  double core = 2.0 * a * s / h;
  // no parallelism (t = 1), no recompute
  ActCase one = Act(m, 4, 1);
  ExpectRel(Activations(one, 1, Recompute::None, false), L * sbh * (32.0 + core) + one.logits, 1e-12);
  // tensor parallel
  ExpectRel(Activations(c, 8, Recompute::None, false), L * sbh * (8.0 + 24.0 / t + core / t) + c.logits, 1e-12);
  // tensor + sequence parallel
  ExpectRel(Activations(c, 8, Recompute::None, true), L * sbh / t * (32.0 + core) + c.logits, 1e-12);
  // tensor parallel + selective recompute
  ExpectRel(Activations(c, 8, Recompute::Selective, false), L * sbh * (8.0 + 24.0 / t) + c.logits, 1e-12);
  // tensor + sequence parallel + selective recompute
  ExpectRel(Activations(c, 8, Recompute::Selective, true), L * 32.0 * sbh / t + c.logits, 1e-12);
  // full recompute: the layer inputs, plus the one layer rebuilt in full
  // during its backward pass (not in Table 2; a planner addition)
  double rebuilt = sbh * (8.0 + 24.0 / t + core / t);
  ExpectRel(Activations(c, 8, Recompute::Full, false), L * 2.0 * sbh + rebuilt + c.logits, 1e-12);
}

// FlashAttention keeps each row's log-sum-exp (fp32) instead of the s x s
// probabilities, whatever the recomputation.
TEST(CostActivations, FlashKeepsNoScoreMatrix) {
  ModelShape m = Gpt(24, 2048, 16, 51200, 2048);
  ActCase c = Act(m, 4, 8);
  c.w.attention = Attention::Flash;
  double t = 8, L = 24;
  double lse = 4.0 * 16.0 * 2048.0 * 4.0 / t;
  ExpectRel(Activations(c, 8, Recompute::None, false), L * (c.sbh * (8.0 + 24.0 / t) + lse) + c.logits, 1e-12);
  ExpectRel(Activations(c, 8, Recompute::Selective, false), L * (c.sbh * (8.0 + 24.0 / t) + lse) + c.logits, 1e-12);
}

TEST(CostActivations, SwiGluGeneralisation) {
  // 32 = 16 + 4 ffn/h for GELU; SwiGLU keeps gate, up, activation and product:
  // 16 + 8 ffn/h.
  ModelShape m = Llama3_8B();
  ActCase c = Act(m, 1, 1);
  double f = 14336.0 / 4096.0;
  double core = 2.0 * 32.0 * 8192.0 / 4096.0;
  ExpectRel(Activations(c, 1, Recompute::None, false), 32.0 * c.sbh * (16.0 + 8.0 * f + core) + c.logits, 1e-12);
}

TEST(CostActivations, Fp32DoublesActivations) {
  ActCase c = Act(Gpt2_124M(), 2, 1);
  double bf16 = Activations(c, 1, Recompute::None, false);
  c.w.precision = Precision::Fp32;
  ExpectRel(Activations(c, 1, Recompute::None, false), 2.0 * bf16, 1e-12);
}

// Pipelines: 32 layers, micro-batch 1, 16 micro-batches per step.
struct PipeCase {
  Workload w;
  double per_layer = 0;
  double logits = 0;
};

auto Pipe(int64_t batch) -> PipeCase {
  PipeCase c;
  ModelShape m = Gpt(32, 1024, 16, 51200, 2048);
  c.w = Work(m, 4, batch);
  c.w.attention = Attention::Materialized;
  double sbh = 2048.0 * 1024.0;
  c.per_layer = sbh * (32.0 + 2.0 * 16.0 * 2048.0 / 1024.0);
  c.logits = 4.0 * sbh * (1.0 + 51200.0 / 1024.0);
  return c;
}

auto PipeActivations(const PipeCase& c, int64_t pipeline, Schedule s, int64_t v) -> double {
  Layout l = MakeLayout(1, 1, pipeline, 1);
  l.schedule = s;
  l.virtual_stages = v;
  return PredictMemory(c.w, l).activations;
}

TEST(CostActivations, OneFOneBFirstStageHoldsTheWholeModel) {
  PipeCase c = Pipe(16);  // m = 16 >= p
  double p1 = PipeActivations(c, 1, Schedule::OneFOneB, 1);
  double p4 = PipeActivations(c, 4, Schedule::OneFOneB, 1);
  ExpectRel(p1, 32.0 * c.per_layer + c.logits, 1e-12);
  // p micro-batches of L/p layers = L layers; the logits live on the last stage.
  ExpectRel(p4, 32.0 * c.per_layer, 1e-12);
}

TEST(CostActivations, OneFOneBWithFewMicroBatches) {
  PipeCase c = Pipe(2);  // m = 2 < p = 4: min(1, m/p) of the full model
  ExpectRel(PipeActivations(c, 4, Schedule::OneFOneB, 1), 0.5 * 32.0 * c.per_layer, 1e-12);
}

TEST(CostActivations, InterleavedFactor) {
  PipeCase c = Pipe(16);
  // 1 + (p - 1) / (p v) = 1 + 3/8
  ExpectRel(PipeActivations(c, 4, Schedule::Interleaved, 2), 1.375 * 32.0 * c.per_layer, 1e-12);
}

TEST(CostActivations, GPipeHoldsEveryMicroBatch) {
  PipeCase c = Pipe(16);
  EXPECT_GE(PipeActivations(c, 4, Schedule::GPipe, 1), 16.0 * 8.0 * c.per_layer * (1 - 1e-12));
}

// GPipe runs every forward pass before any backward pass, so the last stage
// holds its L/p layers for all m micro-batches as the first stage does, and
// every micro-batch's output layer activations as well (avf-run keeps each
// one's softmax until its backward): m ((L/p) layers + logits).
TEST(CostActivations, GPipeLastStageAlsoHoldsTheLogits) {
  PipeCase c = Pipe(16);
  ExpectRel(PipeActivations(c, 4, Schedule::GPipe, 1), 16.0 * (8.0 * c.per_layer + c.logits), 1e-12);
}

TEST(CostMemory, FitsAgainstGpuMemory) {
  Workload w = Work(Llama3_70B(), 8, 8);
  Hardware hw = Node8();
  Layout l = MakeLayout(8, 1, 1, 1);
  Prediction p = Predict(w, l, hw);
  EXPECT_FALSE(p.fits);  // 70B of AdamW states on 8 GPUs without ZeRO
  hw.gpu_memory = p.memory.total();
  EXPECT_TRUE(Predict(w, l, hw).fits);
}

// ---- Time ----------------------------------------------------------------------

TEST(CostTime, Efficiency) {
  ModelShape m = Llama3_8B();
  Hardware hw = Node8();
  hw.hbm_bandwidth = 312e12 / kReferenceBalance;
  EXPECT_DOUBLE_EQ(ComputeEfficiency(m, MakeLayout(1, 1, 1, 1), hw, kPlain), 0.65 * 4096.0 / (4096.0 + 256.0));
  EXPECT_DOUBLE_EQ(ComputeEfficiency(m, MakeLayout(1, 8, 1, 1), hw, kPlain), 0.65 * 512.0 / (512.0 + 256.0));
  // A GPU whose peak outruns its memory twice as far: the ceiling scaled by
  // (1/2)^balance_exponent.
  hw.hbm_bandwidth /= 2;
  Calibration scaled = kPlain;
  scaled.balance_exponent = 0.5;
  EXPECT_DOUBLE_EQ(ComputeEfficiency(m, MakeLayout(1, 8, 1, 1), hw, scaled),
                   0.65 * std::sqrt(0.5) * 512.0 / (512.0 + 256.0));
}

TEST(CostTime, MicroBatches) {
  Workload w = Work(Gpt2_124M(), 64, 512);
  EXPECT_EQ(MicroBatches(w, MakeLayout(32, 1, 1, 4)), 4);
  EXPECT_EQ(MicroBatches(w, MakeLayout(64, 1, 1, 16)), 1);
  EXPECT_EQ(MicroBatches(w, MakeLayout(64, 1, 1, 64)), 1);  // never below one
}

// Materialized attention at the matrix rate and no memory-bound work: the
// model FLOPs (3 x forward) at the calibrated rate.
TEST(CostTime, ComputeIsModelFlopsAtCalibratedRate) {
  ModelShape m = Gpt2_1558M();
  Workload w = Work(m, 1, 8);
  w.attention = Attention::Materialized;
  Hardware hw = Node8();
  hw.hbm_bandwidth = 0;               // no memory-bound terms
  Layout l = MakeLayout(1, 1, 1, 2);  // 4 micro-batches
  double efficiency = 0.65 * 1600.0 / (1600.0 + 256.0);
  Calibration same = kPlain;
  same.attention_efficiency = efficiency;
  double rate = 312e12 * efficiency;
  double tokens = 8.0 * 1024.0;
  TimeBreakdown t = PredictTime(w, l, hw, same);
  ExpectRel(t.compute, tokens * ModelFlopsPerToken(m) / rate, 1e-12);
  // Full recomputation adds one forward pass of the blocks (not the logits).
  ParamCounts c = CountParams(m);
  double blocks_forward = 48.0 * (2.0 * D(c.layer_matmul) + 4.0 * 1024.0 * 1600.0);
  l.recompute = Recompute::Full;
  ExpectRel(PredictTime(w, l, hw, same).compute, tokens * (ModelFlopsPerToken(m) + blocks_forward) / rate, 1e-12);
  // Selective recomputation adds the attention core.
  l.recompute = Recompute::Selective;
  ExpectRel(PredictTime(w, l, hw, same).compute, tokens * (ModelFlopsPerToken(m) + 48.0 * 4.0 * 1024.0 * 1600.0) / rate,
            1e-12);
}

TEST(CostTime, MfuEqualsEfficiencyWhenOnlyComputeCosts) {
  Workload w = Work(Llama3_8B(), 1, 4);
  Hardware hw = Node8();
  hw.hbm_bandwidth = 0;  // no optimizer-step term
  Layout l = MakeLayout(1, 1, 1, 1);
  w.attention = Attention::Materialized;
  Calibration same = kPlain;
  same.attention_efficiency = ComputeEfficiency(w.model, l, hw, kPlain);
  Prediction p = Predict(w, l, hw, same);
  EXPECT_DOUBLE_EQ(p.step_time, p.time.compute);
  ExpectRel(p.mfu, ComputeEfficiency(w.model, l, hw, kPlain), 1e-12);
  ExpectRel(p.tokens_per_s, 4.0 * 8192.0 / p.step_time, 1e-15);
  ExpectRel(p.tflops_per_gpu * 1e12, ModelFlopsPerToken(w.model) * p.tokens_per_s, 1e-12);
}

// Data parallel, no ZeRO, reduction not overlapped: ring all-reduce
// 2 (n-1)/n S / B + 2 (n-1) alpha (nccl-tests PERFORMANCE.md).
struct DataCase {
  Workload w;
  Layout l;
  Hardware hw;
  double grad_bytes = 0;
};

auto Data16() -> DataCase {
  DataCase c;
  c.w = Work(Gpt2_1558M(), 16, 16);
  c.w.overlap_data_comm = false;
  c.w.attention = Attention::Materialized;  // forward : backward = 1 : 2 exactly
  c.l = MakeLayout(16, 1, 1, 1);            // 16 ranks on 2 nodes: over the network
  c.hw = Node8();
  c.grad_bytes = D(CountParams(c.w.model).total) * 2.0;
  return c;
}

// The ring leaves each node once per channel: a node's 8 members share its
// 8 NICs, 8 x 25 GB/s for the ring.
TEST(CostTime, AllReduceOverTheNetwork) {
  DataCase c = Data16();
  double expected = 2.0 * 15.0 / 16.0 * c.grad_bytes / 200e9;
  ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm, expected, 1e-12);
}

// One member per node (tensor 8 takes the rest): the 8 data groups of a node
// run at once, one NIC each.
TEST(CostTime, OneMemberPerNodeGetsOneNic) {
  DataCase c = Data16();
  c.w.gpus = 128;
  c.l = MakeLayout(16, 8, 1, 1);
  ParamCounts counts = CountParams(c.w.model);
  double params = D(StageParamsPerRank(c.w.model, 1, 8, 0));
  double expected = 2.0 * 15.0 / 16.0 * params * 2.0 / 25e9;
  ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm, expected, 1e-12);
  EXPECT_GT(counts.total, 0);
}

TEST(CostTime, DoublingBandwidthHalvesDataComm) {
  DataCase c = Data16();
  c.hw.nvlink_bandwidth = 1e15;  // not the cap of the network ring
  double base = PredictTime(c.w, c.l, c.hw).data_comm;
  c.hw.nic_bandwidth *= 2;
  ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm, base / 2.0, 1e-12);
  // Inside one node the ring runs over NVLink.
  DataCase n = Data16();
  n.w.gpus = 8;
  n.hw.nvlink_bandwidth = 300e9;
  n.l.data = 8;
  double nvlink = PredictTime(n.w, n.l, n.hw).data_comm;
  ExpectRel(nvlink, 2.0 * 7.0 / 8.0 * n.grad_bytes / 300e9, 1e-12);
  n.hw.nvlink_bandwidth *= 2;
  ExpectRel(PredictTime(n.w, n.l, n.hw).data_comm, nvlink / 2.0, 1e-12);
}

TEST(CostTime, AllReduceLatencyTerm) {
  DataCase c = Data16();
  double bandwidth_only = PredictTime(c.w, c.l, c.hw).data_comm;
  c.hw.network_latency = 5e-6;
  ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm - bandwidth_only, 2.0 * 15.0 * 5e-6, 1e-9);
}

TEST(CostTime, OversubscriptionSlowsCrossLeafRings) {
  DataCase c = Data16();
  double flat = PredictTime(c.w, c.l, c.hw).data_comm;
  c.hw.nodes_per_leaf = 1;  // the 2 nodes sit under 2 leaves
  c.hw.oversubscription = 2;
  ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm, 2.0 * flat, 1e-12);
  c.hw.nodes_per_leaf = 2;  // one leaf: no cut
  ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm, flat, 1e-12);
}

TEST(CostTime, OverlapHidesTheReductionBehindTheLastBackward) {
  DataCase c = Data16();
  c.hw.nic_bandwidth = 2e9;
  double all_reduce = PredictTime(c.w, c.l, c.hw).data_comm;
  c.w.overlap_data_comm = true;
  TimeBreakdown t = PredictTime(c.w, c.l, c.hw, kPlain);
  // m = 1, no recompute: backward = 2/3 of the micro-batch's compute.
  double window = t.compute * 2.0 / 3.0;
  ASSERT_GT(all_reduce, window);  // the case is communication bound
  ExpectRel(t.data_comm, all_reduce - window, 1e-9);
  // A fast network is hidden completely.
  c.hw.nic_bandwidth = 1e15;
  c.hw.nvlink_bandwidth = 1e15;
  EXPECT_DOUBLE_EQ(PredictTime(c.w, c.l, c.hw, kPlain).data_comm, 0.0);
}

TEST(CostTime, ZeroOneSplitsTheAllReduce) {
  DataCase c = Data16();
  double all_reduce = PredictTime(c.w, c.l, c.hw).data_comm;
  for (int zero : {1, 2}) {
    c.l.zero = zero;
    c.w.overlap_data_comm = false;
    // reduce-scatter + all-gather: the same bytes as the all-reduce
    ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm, all_reduce, 1e-12);
    c.w.overlap_data_comm = true;
    TimeBreakdown t = PredictTime(c.w, c.l, c.hw, kPlain);
    double forward = t.compute / 3.0, backward = t.compute * 2.0 / 3.0;
    double half = all_reduce / 2.0;
    double expected = std::max(0.0, half - backward) + std::max(0.0, half - forward);
    ExpectRel(t.data_comm, expected, 1e-9);
  }
}

// Two all-gathers and a reduce-scatter per micro-batch; the compute hides
// `overlap` of its length.
TEST(CostTime, ZeroThreeGathersEveryMicroBatch) {
  DataCase c = Data16();
  c.w.global_batch = 64;  // m = 4
  c.w.overlap_data_comm = true;
  c.l.zero = 3;
  c.hw.nic_bandwidth = 1e9;  // communication bound
  Calibration half_hidden = kPlain;
  half_hidden.overlap = 0.5;
  TimeBreakdown t = PredictTime(c.w, c.l, c.hw, half_hidden);
  double m = 4;
  double half = 15.0 / 16.0 * c.grad_bytes / 8e9;  // one all-gather or reduce-scatter
  double per_mb = 3.0 * half - 0.5 * t.compute / m;
  ASSERT_GT(per_mb, 0.0);
  ExpectRel(t.data_comm, m * per_mb, 1e-9);
  // What the compute hides still costs `interference` of its length.
  half_hidden.interference = 0.25;
  ExpectRel(PredictTime(c.w, c.l, c.hw, half_hidden).data_comm, m * (per_mb + 0.25 * 0.5 * t.compute / m), 1e-9);
}

// Gradients reduced in fp32 (FSDP's reduce_dtype) send 4 bytes a parameter;
// the parameters are still gathered at the training precision.
TEST(CostTime, Fp32ReductionSendsFourBytesAGradient) {
  DataCase c = Data16();
  double all_reduce = PredictTime(c.w, c.l, c.hw).data_comm;
  c.w.reduce_in_fp32 = true;
  ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm, 2.0 * all_reduce, 1e-12);
  c.l.zero = 1;  // a reduce-scatter of 4 bytes, an all-gather of 2
  ExpectRel(PredictTime(c.w, c.l, c.hw).data_comm, 1.5 * all_reduce, 1e-12);
  c.l.zero = 3;  // two gathers of 2 bytes, a reduce-scatter of 4
  Calibration unhidden = kPlain;
  unhidden.overlap = 0;
  double half = 15.0 / 16.0 * c.grad_bytes / 200e9;
  ExpectRel(PredictTime(c.w, c.l, c.hw, unhidden).data_comm, 4.0 * half, 1e-12);
}

TEST(CostTime, ZeroThreePaysTheLatencyOncePerLayer) {
  DataCase c = Data16();
  c.w.global_batch = 64;  // m = 4
  c.l.zero = 3;
  c.hw.nic_bandwidth = 1e9;
  c.hw.network_latency = 5e-6;
  TimeBreakdown t = PredictTime(c.w, c.l, c.hw);
  ASSERT_GT(t.data_comm, 0.0);
  double m = 4;
  // the ring's (n-1) alpha once as in any half ring, and again for each of the
  // 48 layers, which are gathered and scattered one at a time
  double latency = 15.0 * 5e-6 + 48.0 * 15.0 * 5e-6;
  double half = 15.0 / 16.0 * c.grad_bytes / 8e9 + latency;
  double hidden = std::min(3.0 * half, kCalibration.overlap * t.compute / m);
  double per_mb = 3.0 * half - hidden + kCalibration.interference * hidden;
  ExpectRel(t.data_comm, m * per_mb, 1e-9);
}

TEST(CostTime, OptimizerStep) {
  DataCase c = Data16();
  double psi = D(CountParams(c.w.model).total);
  // AdamW with bf16 weights: moments 16 + master 8 + 16-bit copy 2 + bf16 gradient 2.
  ExpectRel(PredictTime(c.w, c.l, c.hw).optimizer, psi * 28.0 / 2039e9, 1e-12);
  c.l.zero = 1;
  ExpectRel(PredictTime(c.w, c.l, c.hw).optimizer, psi / 16.0 * 28.0 / 2039e9, 1e-12);
}

TEST(CostTime, TensorParallelCollectives) {
  ModelShape m = Llama3_8B();
  Workload w = Work(m, 8, 4);  // m = 4 micro-batches of 1
  Hardware hw = Node8();
  Layout l = MakeLayout(1, 8, 1, 1);
  double bytes = 8192.0 * 4096.0 * 2.0;
  double all_reduce = 2.0 * 7.0 / 8.0 * bytes / 300e9;
  TimeBreakdown t = PredictTime(w, l, hw);
  ExpectRel(t.tensor_comm, 4.0 * 32.0 * 4.0 * all_reduce, 1e-12);
  l.recompute = Recompute::Full;  // the forward pair again
  ExpectRel(PredictTime(w, l, hw).tensor_comm, 4.0 * 32.0 * 6.0 * all_reduce, 1e-12);
  l.recompute = Recompute::None;
  w.overlap_tensor_comm = true;
  t = PredictTime(w, l, hw, kPlain);
  EXPECT_DOUBLE_EQ(t.tensor_comm, std::max(0.0, 4.0 * 32.0 * 4.0 * all_reduce - t.compute));
}

TEST(CostTime, PipelineBubbleIsStagesMinusOneMicroBatches) {
  ModelShape m = Gpt(32, 2048, 16, 51200, 2048);
  Workload w = Work(m, 4, 16);  // m = 16
  Hardware hw = Node8();
  Layout l = MakeLayout(1, 1, 4, 1);
  TimeBreakdown t = PredictTime(w, l, hw);
  double per_mb = (t.compute + t.pipeline_comm) / 16.0;
  ExpectRel(t.bubble, 3.0 * per_mb, 1e-12);
  // point to point: activations forward and gradients back, one hop
  ExpectRel(t.pipeline_comm, 16.0 * 2.0 * (2048.0 * 2048.0 * 2.0) / 300e9, 1e-12);
  l.schedule = Schedule::GPipe;
  ExpectRel(PredictTime(w, l, hw).bubble, t.bubble, 1e-12);
  // interleaved: (p - 1) / v, and v times the point-to-point traffic
  l.schedule = Schedule::Interleaved;
  l.virtual_stages = 2;
  TimeBreakdown ti = PredictTime(w, l, hw);
  ExpectRel(ti.pipeline_comm, 2.0 * t.pipeline_comm, 1e-12);
  ExpectRel(ti.bubble, 3.0 / 2.0 * (ti.compute + ti.pipeline_comm) / 16.0, 1e-12);
}

TEST(CostTime, StepIsTheSumOfItsParts) {
  Workload w = Work(Llama3_70B(), 64, 256);
  Hardware hw = Node8();
  Layout l = MakeLayout(2, 8, 4, 2);
  l.zero = 1;
  Prediction p = Predict(w, l, hw);
  const TimeBreakdown& t = p.time;
  EXPECT_DOUBLE_EQ(p.step_time, t.compute + t.tensor_comm + t.pipeline_comm + t.bubble + t.data_comm + t.optimizer);
}

// ---- Placement: SpanOf -----------------------------------------------------------

TEST(CostSpan, GroupsFromRankZero) {
  Hardware hw = Node8();
  auto span = [&](int64_t stride, int64_t size) { return SpanOf(stride, size, hw); };
  EXPECT_EQ(span(1, 1).nodes, 1);
  EXPECT_EQ(span(1, 8).nodes, 1);  // a tensor group of 8: one node
  EXPECT_EQ(span(1, 16).nodes, 2);
  EXPECT_EQ(span(2, 4).nodes, 1);    // ranks 0, 2, 4, 6
  EXPECT_EQ(span(2, 8).nodes, 2);    // ranks 0 .. 14
  EXPECT_EQ(span(3, 4).nodes, 2);    // ranks 0, 3, 6, 9
  EXPECT_EQ(span(8, 4).nodes, 4);    // one rank per node
  EXPECT_EQ(span(16, 4).nodes, 4);   // nodes 0, 2, 4, 6
  EXPECT_EQ(span(16, 4).leaves, 1);  // no leaf size: one flat switch
}

TEST(CostSpan, Leaves) {
  Hardware hw = Node8();
  hw.nodes_per_leaf = 4;
  EXPECT_EQ(SpanOf(8, 4, hw).leaves, 1);   // nodes 0-3
  EXPECT_EQ(SpanOf(8, 5, hw).leaves, 2);   // nodes 0-4
  EXPECT_EQ(SpanOf(8, 8, hw).leaves, 2);   // nodes 0-7
  EXPECT_EQ(SpanOf(16, 4, hw).leaves, 2);  // nodes 0, 2, 4, 6
  EXPECT_EQ(SpanOf(1, 8, hw).leaves, 1);
  EXPECT_EQ(SpanOf(64, 2, hw).leaves, 2);  // nodes 0 and 8
}

TEST(CostSpan, PredictionReportsTheDataRing) {
  Workload w = Work(Llama3_8B(), 128, 128);
  Hardware hw = Node8();
  hw.nodes_per_leaf = 4;
  Prediction p = Predict(w, MakeLayout(16, 8, 1, 1), hw);
  EXPECT_EQ(p.data_span.nodes, 16);
  EXPECT_EQ(p.data_span.leaves, 4);
}

}  // namespace
}  // namespace avf::cost
