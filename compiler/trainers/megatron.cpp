#include "trainers/megatron.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>

#include <fmt/format.h>

namespace avf::trainers {

namespace {

constexpr std::string_view kFlags[] = {
#define MEGATRON_FLAG(spelling) spelling,
#include "trainers/megatron_flags.def"
#undef MEGATRON_FLAG
};

using Check = std::optional<Limit> (*)(const cost::Layout&, const cost::Workload&);

auto GPipe(const cost::Layout& l, const cost::Workload& /*w*/) -> std::optional<Limit> {
  if (l.schedule != cost::Schedule::GPipe) return std::nullopt;
  return Limit{"schedule", "the GPipe schedule",
               "its pipeline schedules are 1F1B and interleaved 1F1B; none runs every forward pass before the "
               "backward passes",
               "schedule = one_f_one_b"};
}

auto ChunksWithoutPipeline(const cost::Layout& l, const cost::Workload& /*w*/) -> std::optional<Limit> {
  if (l.schedule != cost::Schedule::Interleaved || l.virtual_stages <= 1 || l.pipeline > 1) return std::nullopt;
  return Limit{"virtual_stages", "model chunks on a single pipeline stage",
               "--num-virtual-stages-per-pipeline-rank needs --pipeline-model-parallel-size above 1",
               "virtual_stages = 1"};
}

// The largest divisor of `tensor` that splits the vocabulary and the MLP
// width evenly (heads and key/value heads split under any divisor of a
// tensor degree that splits them).
auto EvenTensor(int64_t tensor, const cost::ModelShape& m) -> int64_t {
  for (int64_t t = tensor; t > 1; --t) {
    if (tensor % t == 0 && m.vocab % t == 0 && m.ffn % t == 0) return t;
  }
  return 1;
}

// A vocabulary that does not split evenly over the tensor ranks is padded
// until it does, which changes the parameter count.
auto UnevenVocab(const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit> {
  const cost::ModelShape& m = w.model;
  if (m.vocab % l.tensor == 0) return std::nullopt;
  return Limit{"tensor", fmt::format("a vocabulary of {} tokens over tensor parallelism {}", m.vocab, l.tensor),
               "it pads the vocabulary to a multiple of the tensor-parallel size (--make-vocab-size-divisible-by x "
               "--tensor-model-parallel-size), which adds embedding and output rows the model does not have",
               fmt::format("tensor = {}", EvenTensor(l.tensor, m))};
}

auto UnevenFfn(const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit> {
  const cost::ModelShape& m = w.model;
  if (m.ffn % l.tensor == 0) return std::nullopt;
  return Limit{"tensor", fmt::format("an MLP width of {} over tensor parallelism {}", m.ffn, l.tensor),
               "its column-parallel MLP layer gives every tensor rank an equal share of --ffn-hidden-size",
               fmt::format("tensor = {}", EvenTensor(l.tensor, m))};
}

auto Fp32Flash(const cost::Layout& /*l*/, const cost::Workload& w) -> std::optional<Limit> {
  if (w.attention != cost::Attention::Flash || w.precision != cost::Precision::Fp32) return std::nullopt;
  return Limit{"attention", "flash attention in fp32",
               "its flash and fused attention backends (Transformer Engine's FlashAttention and cuDNN kernels) take "
               "fp16 and bf16 only; in fp32 only the unfused backend runs, which stores the softmax output",
               "attention = materialized"};
}

constexpr std::array<Check, 5> kChecks{GPipe, ChunksWithoutPipeline, UnevenVocab, UnevenFfn, Fp32Flash};

}  // namespace

auto MegatronLimit(const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit> {
  for (Check check : kChecks) {
    if (auto limit = check(l, w)) return limit;
  }
  return std::nullopt;
}

auto IsMegatronFlag(std::string_view flag) -> bool {
  return std::find(std::begin(kFlags), std::end(kFlags), flag) != std::end(kFlags);
}

}  // namespace avf::trainers
