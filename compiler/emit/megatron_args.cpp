#include "emit/megatron_args.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include <fmt/format.h>

#include "cost/stages.h"
#include "emit/trainer_config.h"

namespace avf::emit {

namespace {

using Words = std::vector<std::string>;

void Flag(Words& out, std::string_view flag) { out.emplace_back(flag); }

template <typename T>
void Flag(Words& out, std::string_view flag, const T& value) {
  out.emplace_back(flag);
  out.push_back(fmt::format("{}", value));
}

void Architecture(Words& out, const cost::ModelShape& m) {
  if (m.arch == cost::Arch::Gpt2) {
    // Biases and the tanh GELU (Megatron-LM's fused bias-GELU) are its defaults.
    Flag(out, "--position-embedding-type", "learned_absolute");
    Flag(out, "--normalization", "LayerNorm");
  } else {
    // Our RoPE rotates the interleaved pairs (2i, 2i + 1) of each head.
    Flag(out, "--position-embedding-type", "rope");
    Flag(out, "--rotary-interleaved");
    Flag(out, "--normalization", "RMSNorm");
    Flag(out, "--swiglu");
    Flag(out, "--disable-bias-linear");
  }
  if (!m.tied_embeddings) Flag(out, "--untie-embeddings-and-output-weights");
}

void Model(Words& out, const check::JobSpec& job) {
  const cost::ModelShape& m = job.workload.model;
  Flag(out, "--num-layers", m.layers);
  Flag(out, "--hidden-size", m.hidden);
  Flag(out, "--ffn-hidden-size", m.ffn);
  Flag(out, "--num-attention-heads", m.heads);
  if (m.kv_heads != m.heads) {
    Flag(out, "--group-query-attention");
    Flag(out, "--num-query-groups", m.kv_heads);
  }
  Flag(out, "--seq-length", m.seq_len);
  Flag(out, "--max-position-embeddings", m.seq_len);
  Architecture(out, m);
  // The language has no dropout; Megatron-LM's default is 0.1.
  Flag(out, "--hidden-dropout", 0);
  Flag(out, "--attention-dropout", 0);
  bool flash = job.workload.attention == cost::Attention::Flash;
  Flag(out, "--attention-backend", flash ? "flash" : "unfused");
}

// Megatron-LM's custom layout: the chunks in our chunk-major order, the
// embedding ("E") on the first and the loss ("L") on the last.
auto Layout(int64_t layers, int64_t chunks) -> std::string {
  std::vector<int64_t> counts = cost::ChunkLayerCounts(layers, chunks);
  std::string out;
  for (size_t c = 0; c < counts.size(); ++c) {
    if (c > 0) out += '|';
    if (c == 0) out += 'E';
    out += counts[c] == 1 ? std::string("t") : fmt::format("t*{}", counts[c]);
    if (c + 1 == counts.size()) out += 'L';
  }
  return out;
}

void Parallel(Words& out, const check::JobSpec& job, const cost::Layout& l) {
  Flag(out, "--tensor-model-parallel-size", l.tensor);
  Flag(out, "--pipeline-model-parallel-size", l.pipeline);
  int64_t per_stage = cost::ChunksPerStage(l);
  int64_t chunks = l.pipeline * per_stage;
  int64_t layers = job.workload.model.layers;
  if (layers % chunks != 0) {
    Flag(out, "--pipeline-model-parallel-layout", Layout(layers, chunks));
  } else if (per_stage > 1) {
    Flag(out, "--num-virtual-stages-per-pipeline-rank", per_stage);
  }
  // Over one tensor rank there is nothing to split.
  if (l.sequence_parallel && l.tensor > 1) Flag(out, "--sequence-parallel");
}

void Recompute(Words& out, cost::Recompute r) {
  if (r == cost::Recompute::Selective) Flag(out, "--recompute-granularity", "selective");
  if (r == cost::Recompute::Full) {
    Flag(out, "--recompute-granularity", "full");
    Flag(out, "--recompute-method", "uniform");
    Flag(out, "--recompute-num-layers", 1);
  }
}

void Precision(Words& out, cost::Precision p) {
  if (p == cost::Precision::Bf16) Flag(out, "--bf16");
  if (p == cost::Precision::Fp16) Flag(out, "--fp16");
}

void Optimizer(Words& out, const check::OptimizerSpec& o, int64_t steps) {
  bool adam = o.kind == cost::OptimizerKind::AdamW;
  Flag(out, "--optimizer", adam ? "adam" : "sgd");
  if (o.lr) Flag(out, "--lr", *o.lr);
  if (adam && o.betas) {
    Flag(out, "--adam-beta1", o.betas->first);
    Flag(out, "--adam-beta2", o.betas->second);
  }
  if (o.weight_decay) Flag(out, "--weight-decay", *o.weight_decay);
  Flag(out, "--lr-warmup-iters", o.warmup);
  Flag(out, "--lr-decay-style", check::Name(o.schedule));
  Flag(out, "--lr-decay-iters", steps);
}

// ZeRO-1 is the distributed optimizer; ZeRO-2 and 3 are Megatron-FSDP, which
// saves only in its own checkpoint format.
void Zero(Words& out, int zero) {
  if (zero >= 1) Flag(out, "--use-distributed-optimizer");
  if (zero < 2) return;
  Flag(out, "--use-megatron-fsdp");
  Flag(out, "--data-parallel-sharding-strategy", zero == 2 ? "optim_grads" : "optim_grads_params");
  Flag(out, "--ckpt-format", "fsdp_dtensor");
}

// Megatron-LM saves every N iterations, and after the last one; it has no
// time-based flag (CheckpointEverySteps).
void Checkpoints(Words& out, const plan::Plan& plan, const std::string& dir) {
  if (dir.empty()) return;
  Flag(out, "--save", dir);
  Flag(out, "--load", dir);
  Flag(out, "--save-interval", CheckpointEverySteps(plan));
  // Asynchronous saving works in the torch_dist format only (not ZeRO-2/3's).
  if (plan.job.checkpoint.async && plan.chosen.layout.zero < 2) Flag(out, "--async-save");
}

auto Under(const std::string& dir, std::string_view name) -> std::string {
  if (dir.empty() || dir.back() == '/') return dir + std::string(name);
  return dir + "/" + std::string(name);
}

// pretrain_gpt.py reads indexed datasets: the view of the shards that
// avf_megatron_data.py writes on each node, every shard weighted by its
// tokens. All of it trains (Megatron-LM's default split holds 3.1% back).
// An empty cache folder makes every rank build its sample indices.
void Data(Words& out, const deploy::TrainerPaths& paths) {
  Flag(out, "--data-args-path", Under(paths.megatron_view_dir, "data_args"));
  Flag(out, "--data-cache-path", paths.megatron_cache_dir);
  Flag(out, "--split", "100,0,0");
}

// The null tokenizer counts --vocab-size + 1 ids (the last is its end of
// document), padded to a multiple of 1 x the tensor size: the model's
// vocabulary exactly when it splits over the tensor ranks (MegatronLimit).
void Tokenizer(Words& out, int64_t vocab) {
  Flag(out, "--tokenizer-type", "NullTokenizer");
  Flag(out, "--vocab-size", vocab - 1);
  Flag(out, "--make-vocab-size-divisible-by", 1);
}

}  // namespace

auto MegatronArguments(const plan::Plan& plan, const deploy::TrainerPaths& paths) -> std::vector<std::string> {
  const check::JobSpec& job = plan.job;
  const cost::Layout& l = plan.chosen.layout;
  Words out;
  Model(out, job);
  Parallel(out, job, l);
  Flag(out, "--micro-batch-size", l.micro_batch);
  Flag(out, "--global-batch-size", job.workload.global_batch);
  Flag(out, "--train-iters", plan.totals.steps);
  Recompute(out, l.recompute);
  Precision(out, job.workload.precision);
  Optimizer(out, job.optimizer, plan.totals.steps);
  Zero(out, l.zero);
  Checkpoints(out, plan, paths.checkpoint_dir);
  Data(out, paths);
  Tokenizer(out, job.workload.model.vocab);
  return out;
}

}  // namespace avf::emit
