// torchtitan (pinned: kTorchtitanVersion): what its job config can express.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "cost/shape.h"
#include "trainers/trainer.h"

namespace avf::trainers {

inline constexpr std::string_view kTorchtitanVersion = "0.2.2";
// The module torchrun runs unless `trainer { entry }` names another.
inline constexpr std::string_view kTorchtitanEntry = "torchtitan.train";

// The name the TOML gives training.dataset. No torchtitan dataset reads
// aviflowc's token shards: the image must register a reader under this name
// (docs/trainers.md).
inline constexpr std::string_view kTorchtitanDataset = "avf_token_shards";
// The Python module the image provides, imported before torchtitan looks up
// its model (experimental.custom_import): it registers the llama3 train spec
// with a data loader of the token shards.
inline constexpr std::string_view kTorchtitanShardModule = "avf_token_shards";

// One llama3 flavor of the pinned release (torchtitan_flavors.def).
struct TorchtitanFlavor {
  std::string_view name;
  int64_t layers, hidden, heads, kv_heads, ffn, vocab;
  double rope_theta;
  std::string_view attention;  // "sdpa", "flex" or "varlen"
};

auto TorchtitanFlavors() -> std::span<const TorchtitanFlavor>;

// The causal-attention (sdpa) llama3 flavor whose every dimension equals the
// model's; nullopt for any other model, GPT-2 included.
auto TorchtitanFlavorOf(const cost::ModelShape& m) -> std::optional<TorchtitanFlavor>;

// Every `section.key` the pinned release's JobConfig accepts
// (torchtitan_keys.def), e.g. "training.seq_len".
auto TorchtitanKeys() -> std::span<const std::string_view>;
auto IsTorchtitanKey(std::string_view path) -> bool;

auto TorchtitanLimit(const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit>;

}  // namespace avf::trainers
