#include "trainers/torchtitan.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>

#include <fmt/format.h>

namespace avf::trainers {
namespace {

constexpr std::array kFlavors{
#define TORCHTITAN_FLAVOR(name, layers, hidden, heads, kv_heads, ffn, vocab, rope_theta, attention) \
  TorchtitanFlavor{name, layers, hidden, heads, kv_heads, ffn, vocab, rope_theta, attention},
#include "trainers/torchtitan_flavors.def"
};

constexpr std::array kKeys{
#define TORCHTITAN_KEY(path) std::string_view{path},
#include "trainers/torchtitan_keys.def"
};

auto Shape(const cost::ModelShape& m) -> std::string {
  return fmt::format("layers = {}, hidden = {}, heads = {}, kv_heads = {}, ffn = {}, vocab = {}, tied_embeddings = {}",
                     m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.vocab, m.tied_embeddings);
}

// What the job fixes whatever the layout: the model, precision, attention
// kernel and optimizer.
auto WorkloadLimit(const cost::Workload& w) -> std::optional<Limit> {
  if (w.model.arch == cost::Arch::Gpt2) {
    return Limit{"model", "a GPT-2 model",
                 "it has no GPT-2 model (its language models are llama3, llama4, qwen3, deepseek_v3 and gpt_oss)", ""};
  }
  if (!TorchtitanFlavorOf(w.model)) {
    return Limit{"model", fmt::format("a Llama model of {}", Shape(w.model)),
                 "it fixes a model's dimensions per flavor in code, and no llama3 flavor has these "
                 "(8B, 70B, 405B, debugmodel: untied, vocabulary 128256 or 2048)",
                 ""};
  }
  if (w.precision == cost::Precision::Fp16) {
    return Limit{"precision", "fp16 training", "training.mixed_precision_param takes bfloat16 or float32 only",
                 "precision = bf16"};
  }
  if (w.attention == cost::Attention::Materialized) {
    return Limit{"attention", "materialized attention",
                 "its llama3 attention is always scaled_dot_product_attention, which never stores the score matrix",
                 "attention = flash"};
  }
  if (w.optimizer == cost::OptimizerKind::Sgd) {
    return Limit{"optimizer", "SGD", "optimizer.name takes Adam or AdamW only", "optimizer { kind = adamw }"};
  }
  return std::nullopt;
}

// How the data ranks hold the model: FSDP2 (data_parallel_shard_degree)
// shards parameters, gradients and optimizer state together, DDP
// (data_parallel_replicate_degree) shards nothing, and only alone. FSDP2's
// reshard_after_forward = "never" is no ZeRO-2: it keeps whole parameters
// from forward to backward, but they are sharded at rest.
auto ShardingLimit(const cost::Layout& l) -> std::optional<Limit> {
  if (l.data <= 1) return std::nullopt;
  if (l.zero == 1 || l.zero == 2) {
    return Limit{"zero", fmt::format("ZeRO stage {}", l.zero),
                 "FSDP2 shards parameters, gradients and optimizer state together, and DDP shards none", "zero = 3"};
  }
  if (l.zero == 0 && (l.tensor > 1 || l.pipeline > 1)) {
    return Limit{"zero", "replicated data parallelism (ZeRO stage 0) beside tensor or pipeline parallelism",
                 "it runs DDP only as the sole parallelism; with tensor or pipeline stages data ranks are FSDP2's",
                 "zero = 3"};
  }
  return std::nullopt;
}

auto TensorLimit(const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit> {
  if (l.tensor <= 1) return std::nullopt;
  if (!l.sequence_parallel) {
    return Limit{"sequence_parallel", "tensor parallelism without sequence parallelism",
                 "its llama3 tensor-parallel plan always shards the norms and the residual stream over the sequence",
                 "sequence_parallel = true"};
  }
  if (w.model.seq_len % l.tensor != 0) {
    return Limit{"tensor", fmt::format("tensor = {} with seq_len {}", l.tensor, w.model.seq_len),
                 "its sequence parallelism needs seq_len divisible by the tensor degree",
                 fmt::format("tensor = {}", std::gcd(l.tensor, w.model.seq_len))};
  }
  return std::nullopt;
}

}  // namespace

auto TorchtitanFlavors() -> std::span<const TorchtitanFlavor> { return kFlavors; }

auto TorchtitanFlavorOf(const cost::ModelShape& m) -> std::optional<TorchtitanFlavor> {
  if (m.arch != cost::Arch::Llama || m.tied_embeddings) return std::nullopt;
  for (const TorchtitanFlavor& f : kFlavors) {
    bool same = f.layers == m.layers && f.hidden == m.hidden && f.heads == m.heads && f.kv_heads == m.kv_heads &&
                f.ffn == m.ffn && f.vocab == m.vocab;
    if (same && f.attention == "sdpa") return f;
  }
  return std::nullopt;
}

auto TorchtitanKeys() -> std::span<const std::string_view> { return kKeys; }

auto IsTorchtitanKey(std::string_view path) -> bool {
  return std::find(kKeys.begin(), kKeys.end(), path) != kKeys.end();
}

auto TorchtitanLimit(const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit> {
  if (auto limit = WorkloadLimit(w)) return limit;
  if (auto limit = ShardingLimit(l)) return limit;
  // Without FSDP, torchtitan casts to bf16 only through autocast, and only
  // for DDP or one GPU: tensor and pipeline stages on one data rank train
  // in fp32.
  bool fsdp = l.data > 1 && l.zero == 3;
  if (w.precision == cost::Precision::Bf16 && !fsdp && (l.tensor > 1 || l.pipeline > 1)) {
    return Limit{"precision", "bf16 mixed precision with tensor or pipeline parallelism on one data rank",
                 "it applies mixed precision through FSDP2 (more than one data rank) or autocast (DDP or one GPU) "
                 "only, and otherwise trains in fp32",
                 "precision = fp32"};
  }
  return TensorLimit(l, w);
}

}  // namespace avf::trainers
