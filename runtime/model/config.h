// The model a plan trains, as the runtime needs it, and the layout of its
// parameters in one flat buffer (the buffer ZeRO's slices index, see
// docs/plan-format.md#zero). The layout's counts equal the compiler's
// parameter count (compiler/cost/counts.cpp), which the tests check.
//
// A rank of a parallel plan holds a shard (ShardSpec): the layers of its
// pipeline stage (one range per model chunk), the embedding on the first
// stage, the final norm and output projection on the last, each cut
// Megatron-style across the tensor group. Its layout lists only what it
// holds, in the same order as the full model's, and every tensor says which
// part of the full tensor it is (TensorPart), so any shard maps onto the
// full model element by element.
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

// Layers [first, first + count) of one model chunk.
struct LayerRange {
  int64_t first = 0, count = 0;
};

// What one rank holds. The default is the whole model on one rank.
struct ShardSpec {
  int64_t tensor_rank = 0, tensor_size = 1;
  // Activations between the tensor-parallel regions are cut by rows
  // (sequence parallelism) instead of replicated.
  bool sequence_parallel = false;
  std::vector<LayerRange> chunks;  // empty: one chunk of every layer
  bool embedding = true;           // the token (and position) embedding: first stage
  bool output = true;              // the final norm and output projection: last stage
};

// Which part of the full (rows x cols) tensor a shard's tensor holds: the
// rows of `row_blocks` (each [first, first + count)), in order, and of each
// row the columns [col_first, col_first + col_count).
struct TensorPart {
  int64_t rows = 0, cols = 0;
  struct Rows {
    int64_t first = 0, count = 0;
  };
  std::vector<Rows> row_blocks;
  int64_t col_first = 0, col_count = 0;
  // Element `local` of the shard's tensor as an index into the full tensor.
  auto FullIndex(int64_t local) const -> int64_t;
};

// One tensor of the flat parameter buffer: elements [offset, offset + size).
struct ParamTensor {
  std::string name;  // the full model's name: "h.3.attn.qkv.weight"
  int64_t offset = 0;
  int64_t size = 0;
  TensorPart part;
};

// Offsets of one block's tensors; -1 for a tensor the architecture has not
// (Llama has no biases, RMSNorm has no bias).
struct BlockParams {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

struct ParamLayout {
  std::vector<ParamTensor> tensors;
  // -1 where the shard does not hold it. lm_head -1 on an output shard: the
  // output projection is wte itself (tied, one stage); on a last stage of a
  // tied model it is that stage's copy of wte.
  int64_t wte = -1, wpe = -1, lnf_w = -1, lnf_b = -1, lm_head = -1;
  std::vector<BlockParams> blocks;  // the shard's blocks, chunk after chunk
  // Each block's tensors are contiguous: elements [first, first + count).
  struct Range {
    int64_t first = 0, count = 0;
  };
  std::vector<Range> block_ranges;
  std::vector<int64_t> block_layers;         // the model layer of each block
  std::vector<int64_t> chunk_first_block;    // chunk c's blocks start here
  int64_t vocab_first = 0, vocab_count = 0;  // the shard's rows of wte / lm_head
  int64_t total = 0;
};

// The sizes are plain int64 products: a config read from a plan is bounded
// first (runtime::CheckSizes keeps every tensor and total at most 2^50).
// The shard must be one of the config: heads, kv heads, the MLP width and
// the vocabulary divide by the tensor size and the chunks are layers of the
// model (ValidatePlan refuses a plan otherwise: plan/cuts.h); asserted.
auto LayoutOf(const ModelConfig& c, const ShardSpec& shard = {}) -> ParamLayout;

}  // namespace avf::model
