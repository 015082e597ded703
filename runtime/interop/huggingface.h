// Our GPT-2 and Llama parameters in the layout of Hugging Face transformers'
// GPT2LMHeadModel and LlamaForCausalLM, both ways, and their config.json
// (docs/huggingface.md has the table of every tensor).
//
// "Our" tensors are the whole model's parameters (model::LayoutOf of the
// config, one shard), named as the layout names them ("wte",
// "h.3.attn.qkv.weight", "ln_f.weight", "lm_head.weight" when untied), in the
// layout's order, each the row-major elements of the full tensor: a bias or
// norm weight has shape {n}, every other tensor {rows, cols} (a weight is
// [out, in]). OurTensors and OurFlat convert to and from the flat parameter
// buffer of a one-rank model::Transformer.
//
// What changes on the way: GPT-2's Conv1D weights are [in, out], so ours are
// transposed; Llama's fused q/k/v and gate/up rows are split into their own
// tensors; and our RoPE rotates interleaved pairs (2i, 2i+1) of each head
// (cpu/kernels.h RopeForward) where Hugging Face's Llama rotates halves (i,
// i + head_dim/2), so the rows of q_proj and k_proj are reordered within each
// head (row 2i + a of ours is row a * head_dim/2 + i of theirs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include "interop/safetensors.h"
#include "model/config.h"

namespace avf::interop {

// The epsilon of our LayerNorm and RMSNorm kernels (runtime/cpu/kernels_norm.cpp).
inline constexpr double kNormEpsilon = 1e-5;

// How one Hugging Face tensor is made from one of ours.
enum class Transform : uint8_t {
  Copy,       // the same elements in the same order
  Transpose,  // ours [rows, cols] is theirs [cols, rows] (GPT-2's Conv1D)
  Rows,       // rows [first_row, first_row + row_count) of ours, as they are
  RopeRows,   // those rows, each head's rows reordered from interleaved pairs to halves
};

struct TensorMapping {
  std::string ours;
  std::vector<int64_t> our_shape;
  std::string hf;
  std::vector<int64_t> hf_shape;
  Transform transform = Transform::Copy;
  int64_t first_row = 0, row_count = 0;  // Rows and RopeRows
};

// What the mapping takes: every size positive, heads dividing hidden and
// kv_heads dividing heads, the parameter count below 2^50; GPT-2 without
// grouped-query attention (GPT2LMHeadModel has none), Llama with an even
// head_dim (RoPE pairs).
auto CheckConfig(const model::ModelConfig& c) -> llvm::Error;

// Every Hugging Face tensor of the config's model, in the order of ours
// (q, k, v and gate, up in that order); no lm_head.weight when tied.
auto HuggingFaceMapping(const model::ModelConfig& c) -> llvm::Expected<std::vector<TensorMapping>>;

// Our tensors from the flat parameter buffer of the whole model (LayoutOf(c)
// with the default shard), and back.
auto OurTensors(const model::ModelConfig& c, llvm::ArrayRef<float> flat) -> llvm::Expected<std::vector<HostTensor>>;
auto OurFlat(const model::ModelConfig& c, const std::vector<HostTensor>& ours) -> llvm::Expected<std::vector<float>>;

// Ours -> theirs. Every tensor of the layout must be there, with its shape,
// and nothing else.
auto ToHuggingFace(const model::ModelConfig& c, const std::vector<HostTensor>& ours)
    -> llvm::Expected<std::vector<HostTensor>>;

// Theirs -> ours, the exact inverse. Every expected tensor must be there with
// its shape; a name without the "transformer." / "model." prefix is taken as
// with it (files saved from GPT2Model or LlamaModel). Ignored: the attention
// masks and rotary frequencies that older files carry (names ending in
// ".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq"), and, when tied,
// an "lm_head.weight" equal to the embedding. Anything else is an error.
auto FromHuggingFace(const model::ModelConfig& c, std::vector<HostTensor> hf)
    -> llvm::Expected<std::vector<HostTensor>>;

// The config.json of GPT2LMHeadModel or LlamaForCausalLM for the config, with
// our kernels' choices (tanh GELU "gelu_new", norm epsilon kNormEpsilon, no
// dropout, no attention biases in Llama); torch_dtype from `dtype`. Written
// for any config: ToHuggingFace is what refuses one it cannot express.
auto HuggingFaceConfig(const model::ModelConfig& c, Dtype dtype = Dtype::F32) -> std::string;

// The model a config.json describes, or an error naming the field: a model
// type other than gpt2 and llama, and options our kernels do not compute
// (another activation or norm epsilon, rope_scaling, attention or MLP biases
// in Llama, scaled or cross attention in GPT-2). The sequence length is the
// position limit (n_positions, max_position_embeddings).
auto ConfigFromHuggingFace(llvm::StringRef json) -> llvm::Expected<model::ModelConfig>;

// A folder as transformers' save_pretrained writes one: config.json and
// model.safetensors (with the metadata {"format": "pt"} that
// from_pretrained expects), each written atomically; the folder is created.
auto ExportHuggingFace(const std::string& dir, const model::ModelConfig& c, const std::vector<HostTensor>& ours,
                       Dtype dtype) -> llvm::Error;

struct ImportedModel {
  model::ModelConfig config;
  std::vector<HostTensor> tensors;  // ours
};
// Reads such a folder (one model.safetensors: a sharded checkpoint is refused).
auto ImportHuggingFace(const std::string& dir) -> llvm::Expected<ImportedModel>;

}  // namespace avf::interop
