// Tests for compiler/trainers/megatron.cpp (what Megatron-LM core_v0.15.3
// can run of a layout) and compiler/emit/megatron_args.cpp (its command line
// for a plan). The expected command lines are written out by hand.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cost/stages.h"
#include "cost_test_util.h"
#include "emit/megatron_args.h"
#include "trainers/megatron.h"

namespace avf::trainers {
namespace {

using Words = std::vector<std::string>;

using namespace cost::test_shapes;  // NOLINT(google-build-using-namespace): the shared shapes

auto WorkloadOf(const cost::ModelShape& m) -> cost::Workload { return Work(m, 1, 1); }

// ---- MegatronLimit -------------------------------------------------------------

TEST(MegatronLimit, ExpressesEveryZeroStageScheduleAndRecompute) {
  cost::Workload w = WorkloadOf(Llama3_8B());
  cost::Layout l;
  l.tensor = 8;
  l.pipeline = 4;
  l.data = 4;
  for (int zero : {0, 1, 2, 3}) {
    l.zero = zero;
    EXPECT_FALSE(MegatronLimit(l, w)) << "zero " << zero;
  }
  l.schedule = cost::Schedule::Interleaved;
  l.virtual_stages = 3;  // 32 layers on 12 chunks: uneven, written as a layout
  l.recompute = cost::Recompute::Full;
  l.sequence_parallel = true;
  EXPECT_FALSE(MegatronLimit(l, w));
  l.recompute = cost::Recompute::Selective;
  w.precision = cost::Precision::Fp16;
  EXPECT_FALSE(MegatronLimit(l, w));
}

TEST(MegatronLimit, GPipeRunsAsOneFOneB) {
  cost::Layout l;
  l.pipeline = 4;
  l.schedule = cost::Schedule::GPipe;
  auto limit = MegatronLimit(l, WorkloadOf(Llama3_8B()));
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->field, "schedule");
  EXPECT_EQ(limit->what, "the GPipe schedule");
  EXPECT_EQ(limit->fix, "schedule = one_f_one_b");
}

TEST(MegatronLimit, ChunksNeedAPipeline) {
  cost::Layout l;
  l.schedule = cost::Schedule::Interleaved;
  l.virtual_stages = 2;
  auto limit = MegatronLimit(l, WorkloadOf(Llama3_8B()));
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->field, "virtual_stages");
  EXPECT_EQ(limit->fix, "virtual_stages = 1");
}

// 50257 = 29 x 1733: no tensor degree above 1 up to 8 splits it.
TEST(MegatronLimit, VocabularyThatTensorDoesNotSplit) {
  cost::Layout l;
  l.tensor = 4;
  auto limit = MegatronLimit(l, WorkloadOf(Gpt2_124M()));
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->field, "tensor");
  EXPECT_EQ(limit->what, "a vocabulary of 50257 tokens over tensor parallelism 4");
  EXPECT_EQ(limit->fix, "tensor = 1");

  cost::ModelShape m = Gpt2_124M();
  m.vocab = 50304;  // 2^7 x 393
  EXPECT_FALSE(MegatronLimit(l, WorkloadOf(m)));
}

TEST(MegatronLimit, MlpWidthThatTensorDoesNotSplit) {
  cost::ModelShape m = Llama3_8B();
  m.ffn = 11010;  // 2 x 5 x 1101: splits over 2, not over 4 or 8
  cost::Layout l;
  l.tensor = 8;
  auto limit = MegatronLimit(l, WorkloadOf(m));
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->field, "tensor");
  EXPECT_EQ(limit->what, "an MLP width of 11010 over tensor parallelism 8");
  EXPECT_EQ(limit->fix, "tensor = 2");
}

TEST(MegatronLimit, FlashAttentionNeedsSixteenBits) {
  cost::Workload w = WorkloadOf(Gpt2_124M());
  w.precision = cost::Precision::Fp32;
  auto limit = MegatronLimit(cost::Layout{}, w);
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->field, "attention");
  EXPECT_EQ(limit->fix, "attention = materialized");
  w.attention = cost::Attention::Materialized;
  EXPECT_FALSE(MegatronLimit(cost::Layout{}, w));
  w.attention = cost::Attention::Flash;
  w.precision = cost::Precision::Bf16;
  EXPECT_FALSE(MegatronLimit(cost::Layout{}, w));
}

TEST(MegatronLimit, ReachedThroughLimitOf) {
  cost::Layout l;
  l.pipeline = 2;
  l.schedule = cost::Schedule::GPipe;
  EXPECT_TRUE(LimitOf(check::TrainerKind::Megatron, l, WorkloadOf(Llama3_8B())));
  EXPECT_EQ(PinnedVersion(check::TrainerKind::Megatron), "core_v0.15.3");
}

// ---- MegatronArguments -----------------------------------------------------------

// Llama 3 8B on 16 GPUs: tensor 4, pipeline 2 with 2 chunks each (32 layers
// split evenly), ZeRO-1, selective recompute, sequence parallel.
auto LlamaPlan() -> plan::Plan {
  plan::Plan p;
  p.job.workload = WorkloadOf(Llama3_8B());
  p.job.workload.gpus = 16;
  p.job.workload.global_batch = 64;
  p.job.steps = 1000;
  p.totals.steps = 1000;
  p.job.optimizer.lr = 3e-4;
  p.job.optimizer.betas = {{0.9, 0.95}};
  p.job.optimizer.weight_decay = 0.1;
  p.job.optimizer.warmup = 2000;
  p.job.checkpoint.enabled = true;
  p.job.checkpoint.every_steps = 500;
  p.job.checkpoint.async = true;
  cost::Layout& l = p.chosen.layout;
  l.tensor = 4;
  l.pipeline = 2;
  l.data = 2;
  l.zero = 1;
  l.schedule = cost::Schedule::Interleaved;
  l.virtual_stages = 2;
  l.recompute = cost::Recompute::Selective;
  l.sequence_parallel = true;
  return p;
}

// GPT-2 124M (its vocabulary padded to 50304) on 10 GPUs in fp32: pipeline
// 5 (12 layers: 2, 2, 3, 3, 2), ZeRO-3, full recompute, SGD, checkpoints
// every 30 minutes (no flag: at the predicted step time), started from
// pretrained weights.
auto Gpt2Plan() -> plan::Plan {
  plan::Plan p;
  p.job.workload = WorkloadOf(Gpt2_124M());
  p.job.workload.model.vocab = 50304;
  p.job.workload.precision = cost::Precision::Fp32;
  p.job.workload.attention = cost::Attention::Materialized;
  p.job.workload.optimizer = cost::OptimizerKind::Sgd;
  p.job.workload.gpus = 10;
  p.job.workload.global_batch = 16;
  p.job.steps = 300;
  p.totals.steps = 300;
  p.job.optimizer.kind = cost::OptimizerKind::Sgd;
  p.job.optimizer.lr = 0.01;
  p.job.optimizer.betas = {{0.9, 0.95}};  // not Adam: not passed
  p.job.optimizer.schedule = check::LrSchedule::Linear;
  p.job.checkpoint.enabled = true;
  p.job.checkpoint.every_seconds = 1800;
  p.chosen.prediction.step_time = 7.0;  // 1800 s: 257 steps
  cost::Layout& l = p.chosen.layout;
  l.pipeline = 5;
  l.data = 2;
  l.zero = 3;
  l.micro_batch = 4;
  l.recompute = cost::Recompute::Full;
  return p;
}

TEST(MegatronArguments, Llama) {
  deploy::TrainerPaths paths{"/data/docs", "/ckpt/pretrain", "",
                             "/out",       "/tmp/view",      "/ckpt/pretrain/run/megatron_cache"};
  Words expected{"--num-layers",
                 "32",
                 "--hidden-size",
                 "4096",
                 "--ffn-hidden-size",
                 "14336",
                 "--num-attention-heads",
                 "32",
                 "--group-query-attention",
                 "--num-query-groups",
                 "8",
                 "--seq-length",
                 "8192",
                 "--max-position-embeddings",
                 "8192",
                 "--position-embedding-type",
                 "rope",
                 "--rotary-interleaved",
                 "--normalization",
                 "RMSNorm",
                 "--swiglu",
                 "--disable-bias-linear",
                 "--untie-embeddings-and-output-weights",
                 "--hidden-dropout",
                 "0",
                 "--attention-dropout",
                 "0",
                 "--attention-backend",
                 "flash",
                 "--tensor-model-parallel-size",
                 "4",
                 "--pipeline-model-parallel-size",
                 "2",
                 "--num-virtual-stages-per-pipeline-rank",
                 "2",
                 "--sequence-parallel",
                 "--micro-batch-size",
                 "1",
                 "--global-batch-size",
                 "64",
                 "--train-iters",
                 "1000",
                 "--recompute-granularity",
                 "selective",
                 "--bf16",
                 "--optimizer",
                 "adam",
                 "--lr",
                 "0.0003",
                 "--adam-beta1",
                 "0.9",
                 "--adam-beta2",
                 "0.95",
                 "--weight-decay",
                 "0.1",
                 "--lr-warmup-iters",
                 "2000",
                 "--lr-decay-style",
                 "cosine",
                 "--lr-decay-iters",
                 "1000",
                 "--use-distributed-optimizer",
                 "--save",
                 "/ckpt/pretrain",
                 "--load",
                 "/ckpt/pretrain",
                 "--save-interval",
                 "500",
                 "--async-save",
                 "--data-args-path",
                 "/tmp/view/data_args",
                 "--data-cache-path",
                 "/ckpt/pretrain/run/megatron_cache",
                 "--split",
                 "100,0,0",
                 "--tokenizer-type",
                 "NullTokenizer",
                 "--vocab-size",
                 "128255",
                 "--make-vocab-size-divisible-by",
                 "1"};
  EXPECT_EQ(emit::MegatronArguments(LlamaPlan(), paths), expected);
}

TEST(MegatronArguments, Gpt2) {
  // A Megatron-LM job has no `init` (trainers::JobLimit): the folder is not read.
  deploy::TrainerPaths paths{"/mnt/hot/toy/", "/ckpt/gpt2", "/init/gpt2", "/out", "/tmp/view/", ""};
  Words expected{"--num-layers",
                 "12",
                 "--hidden-size",
                 "768",
                 "--ffn-hidden-size",
                 "3072",
                 "--num-attention-heads",
                 "12",
                 "--seq-length",
                 "1024",
                 "--max-position-embeddings",
                 "1024",
                 "--position-embedding-type",
                 "learned_absolute",
                 "--normalization",
                 "LayerNorm",
                 "--hidden-dropout",
                 "0",
                 "--attention-dropout",
                 "0",
                 "--attention-backend",
                 "unfused",
                 "--tensor-model-parallel-size",
                 "1",
                 "--pipeline-model-parallel-size",
                 "5",
                 "--pipeline-model-parallel-layout",
                 "Et*2|t*2|t*3|t*3|t*2L",
                 "--micro-batch-size",
                 "4",
                 "--global-batch-size",
                 "16",
                 "--train-iters",
                 "300",
                 "--recompute-granularity",
                 "full",
                 "--recompute-method",
                 "uniform",
                 "--recompute-num-layers",
                 "1",
                 "--optimizer",
                 "sgd",
                 "--lr",
                 "0.01",
                 "--lr-warmup-iters",
                 "0",
                 "--lr-decay-style",
                 "linear",
                 "--lr-decay-iters",
                 "300",
                 "--use-distributed-optimizer",
                 "--use-megatron-fsdp",
                 "--data-parallel-sharding-strategy",
                 "optim_grads_params",
                 "--ckpt-format",
                 "fsdp_dtensor",
                 "--save",
                 "/ckpt/gpt2",
                 "--load",
                 "/ckpt/gpt2",
                 "--save-interval",
                 "257",
                 "--data-args-path",
                 "/tmp/view/data_args",
                 "--data-cache-path",
                 "",
                 "--split",
                 "100,0,0",
                 "--tokenizer-type",
                 "NullTokenizer",
                 "--vocab-size",
                 "50303",
                 "--make-vocab-size-divisible-by",
                 "1"};
  EXPECT_EQ(emit::MegatronArguments(Gpt2Plan(), paths), expected);
}

TEST(MegatronArguments, ZeroTwoShardsGradientsNotParameters) {
  plan::Plan p = Gpt2Plan();
  p.chosen.layout.zero = 2;
  Words words = emit::MegatronArguments(p, deploy::TrainerPaths{"/d", "", "", "", "", ""});
  auto at = std::find(words.begin(), words.end(), "--data-parallel-sharding-strategy");
  ASSERT_NE(at, words.end());
  EXPECT_EQ(*(at + 1), "optim_grads");
  // No checkpoint folder: neither --save nor --load.
  EXPECT_EQ(std::find(words.begin(), words.end(), "--load"), words.end());
}

// With no `every`, only the last step's checkpoint, as avf-run writes it.
TEST(MegatronArguments, CheckpointWithoutIntervalSavesTheLastStep) {
  plan::Plan p = Gpt2Plan();
  p.job.checkpoint.every_seconds.reset();
  Words words = emit::MegatronArguments(p, deploy::TrainerPaths{"/d", "/c", "", "", "", ""});
  auto at = std::find(words.begin(), words.end(), "--save-interval");
  ASSERT_NE(at, words.end());
  EXPECT_EQ(*(at + 1), "300");
}

TEST(MegatronArguments, EveryFlagIsOneOfThePinnedRelease) {
  EXPECT_TRUE(IsMegatronFlag("--num-layers"));
  EXPECT_TRUE(IsMegatronFlag("--persistent-save-interval"));  // an alias
  EXPECT_FALSE(IsMegatronFlag("--num-layer"));
  EXPECT_FALSE(IsMegatronFlag("--zero-stage"));
  deploy::TrainerPaths paths{"/data", "/ckpt", "/init", "/out", "", ""};
  std::vector<plan::Plan> plans{LlamaPlan(), Gpt2Plan()};
  plan::Plan fp16 = LlamaPlan();
  fp16.job.workload.precision = cost::Precision::Fp16;
  fp16.chosen.layout.recompute = cost::Recompute::Full;
  fp16.chosen.layout.zero = 2;
  fp16.job.workload.model.kv_heads = fp16.job.workload.model.heads;
  plans.push_back(fp16);
  for (const plan::Plan& p : plans) {
    for (const std::string& word : emit::MegatronArguments(p, paths)) {
      if (word.starts_with("--")) {
        EXPECT_TRUE(IsMegatronFlag(word)) << word;
      }
    }
  }
}

// The layout string read back as Megatron-LM reads it: stages split by '|',
// `t*N` is N layers; stage g (chunk-major, as ours) must hold our chunk g.
auto LayersPerStage(const std::string& layout) -> std::vector<int64_t> {
  std::vector<int64_t> out{0};
  for (size_t i = 0; i < layout.size(); ++i) {
    char c = layout[i];
    if (c == '|') out.push_back(0);
    if (c != 't') continue;
    if (i + 1 < layout.size() && layout[i + 1] == '*') {
      size_t end = i + 2;
      while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end]))) ++end;
      out.back() += std::stoll(layout.substr(i + 2, end - i - 2));
      i = end - 1;
    } else {
      out.back() += 1;
    }
  }
  return out;
}

TEST(MegatronArguments, LayoutReproducesOurSplit) {
  struct Case {
    int64_t layers, pipeline, chunks_per_stage;
  };
  for (Case c : {Case{126, 16, 1}, Case{12, 5, 1}, Case{7, 4, 1}, Case{10, 2, 2}, Case{80, 3, 4}, Case{33, 4, 8}}) {
    plan::Plan p = LlamaPlan();
    p.job.workload.model.layers = c.layers;
    p.chosen.layout.pipeline = c.pipeline;
    p.chosen.layout.virtual_stages = c.chunks_per_stage;
    p.chosen.layout.schedule = c.chunks_per_stage > 1 ? cost::Schedule::Interleaved : cost::Schedule::OneFOneB;
    Words words = emit::MegatronArguments(p, deploy::TrainerPaths{"/d", "", "", "", "", ""});
    auto at = std::find(words.begin(), words.end(), "--pipeline-model-parallel-layout");
    ASSERT_NE(at, words.end()) << c.layers << " on " << c.pipeline << " x " << c.chunks_per_stage;
    std::string layout = *(at + 1);
    EXPECT_EQ(layout.front(), 'E');
    EXPECT_EQ(layout.back(), 'L');
    EXPECT_EQ(LayersPerStage(layout), cost::ChunkLayerCounts(c.layers, c.pipeline * c.chunks_per_stage)) << layout;
    EXPECT_EQ(std::find(words.begin(), words.end(), "--num-virtual-stages-per-pipeline-rank"), words.end());
  }
  plan::Plan p = LlamaPlan();
  p.job.workload.model.layers = 126;
  p.chosen.layout.pipeline = 16;
  p.chosen.layout.schedule = cost::Schedule::OneFOneB;
  Words words = emit::MegatronArguments(p, deploy::TrainerPaths{"/d", "", "", "", "", ""});
  auto at = std::find(words.begin(), words.end(), "--pipeline-model-parallel-layout");
  ASSERT_NE(at, words.end());
  EXPECT_EQ(*(at + 1), "Et*7|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*7L");
}

}  // namespace
}  // namespace avf::trainers
