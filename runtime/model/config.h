// The model a plan trains, as the runtime needs it, and the layout of its
// parameters in one flat buffer (the buffer ZeRO's slices index, see
// docs/plan-format.md#zero). The layout's counts equal the compiler's
// parameter count (compiler/cost/counts.cpp), which the tests check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace avf::model {

enum class Arch : uint8_t { Gpt2, Llama };

struct ModelConfig {
  Arch arch = Arch::Gpt2;
  int64_t layers = 1, hidden = 64, heads = 4, kv_heads = 4, ffn = 256, vocab = 256, seq_len = 64;
  bool tied_embeddings = true;
  double rope_theta = 10000.0;
  auto head_dim() const -> int64_t { return hidden / heads; }
  auto qkv_dim() const -> int64_t { return (heads + 2 * kv_heads) * head_dim(); }
  // GPT-2: fc (ffn) then proj; Llama: gate and up (2 x ffn) then down.
  auto mlp_in_dim() const -> int64_t { return arch == Arch::Llama ? 2 * ffn : ffn; }
};

// One tensor of the flat parameter buffer: elements [offset, offset + size).
struct ParamTensor {
  std::string name;  // "h.3.attn.qkv.weight"
  int64_t offset = 0;
  int64_t size = 0;
};

// Offsets of one block's tensors; -1 for a tensor the architecture has not
// (Llama has no biases, RMSNorm has no bias).
struct BlockParams {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

struct ParamLayout {
  std::vector<ParamTensor> tensors;
  int64_t wte = 0, wpe = -1, lnf_w = 0, lnf_b = -1, lm_head = -1;  // lm_head -1: tied to wte
  std::vector<BlockParams> blocks;
  int64_t total = 0;
};

auto LayoutOf(const ModelConfig& c) -> ParamLayout;

}  // namespace avf::model
