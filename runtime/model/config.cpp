#include "model/config.h"

namespace avf::model {

namespace {

// Appends a tensor and returns its offset; size 0 adds nothing and returns -1.
auto Add(ParamLayout& l, std::string name, int64_t size) -> int64_t {
  if (size == 0) return -1;
  l.tensors.push_back({std::move(name), l.total, size});
  l.total += size;
  return l.tensors.back().offset;
}

auto Block(ParamLayout& l, const ModelConfig& c, int64_t i) -> BlockParams {
  bool gpt2 = c.arch == Arch::Gpt2;
  int64_t C = c.hidden;
  std::string p = "h." + std::to_string(i) + ".";
  BlockParams b{};
  b.ln1_w = Add(l, p + "ln_1.weight", C);
  b.ln1_b = Add(l, p + "ln_1.bias", gpt2 ? C : 0);
  b.qkv_w = Add(l, p + "attn.qkv.weight", c.qkv_dim() * C);
  b.qkv_b = Add(l, p + "attn.qkv.bias", gpt2 ? c.qkv_dim() : 0);
  b.proj_w = Add(l, p + "attn.proj.weight", C * c.heads * c.head_dim());
  b.proj_b = Add(l, p + "attn.proj.bias", gpt2 ? C : 0);
  b.ln2_w = Add(l, p + "ln_2.weight", C);
  b.ln2_b = Add(l, p + "ln_2.bias", gpt2 ? C : 0);
  b.fc_w = Add(l, p + (gpt2 ? "mlp.fc.weight" : "mlp.gate_up.weight"), c.mlp_in_dim() * C);
  b.fc_b = Add(l, p + "mlp.fc.bias", gpt2 ? c.ffn : 0);
  b.fcproj_w = Add(l, p + (gpt2 ? "mlp.proj.weight" : "mlp.down.weight"), C * c.ffn);
  b.fcproj_b = Add(l, p + "mlp.proj.bias", gpt2 ? C : 0);
  return b;
}

}  // namespace

auto LayoutOf(const ModelConfig& c) -> ParamLayout {
  ParamLayout l;
  bool gpt2 = c.arch == Arch::Gpt2;
  l.wte = Add(l, "wte", c.vocab * c.hidden);
  l.wpe = Add(l, "wpe", gpt2 ? c.seq_len * c.hidden : 0);
  for (int64_t i = 0; i < c.layers; ++i) l.blocks.push_back(Block(l, c, i));
  l.lnf_w = Add(l, "ln_f.weight", c.hidden);
  l.lnf_b = Add(l, "ln_f.bias", gpt2 ? c.hidden : 0);
  l.lm_head = Add(l, "lm_head.weight", c.tied_embeddings ? 0 : c.vocab * c.hidden);
  return l;
}

}  // namespace avf::model
