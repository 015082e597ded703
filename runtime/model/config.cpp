#include "model/config.h"

#include <cassert>

namespace avf::model {

namespace {

// The local shard's sizes: cut Megatron-style by the tensor size T.
struct Cut {
  const ModelConfig& c;
  const ShardSpec& s;
  auto T() const -> int64_t { return s.tensor_size; }
  auto t() const -> int64_t { return s.tensor_rank; }
  auto q() const -> int64_t { return c.heads * c.head_dim(); }
  auto kv() const -> int64_t { return c.kv_heads * c.head_dim(); }
  // Rows [first + t*count/T, ...) of a block of `count` rows starting at `first`.
  auto Mine(int64_t first, int64_t count) const -> TensorPart::Rows { return {first + t() * count / T(), count / T()}; }
};

auto Whole(int64_t rows, int64_t cols) -> TensorPart { return {rows, cols, {{0, rows}}, 0, cols}; }
auto RowsOf(int64_t rows, int64_t cols, std::vector<TensorPart::Rows> blocks) -> TensorPart {
  return {rows, cols, std::move(blocks), 0, cols};
}
auto ColumnsOf(int64_t rows, int64_t cols, int64_t first, int64_t count) -> TensorPart {
  return {rows, cols, {{0, rows}}, first, count};
}

auto Size(const TensorPart& p) -> int64_t {
  int64_t rows = 0;
  for (const TensorPart::Rows& r : p.row_blocks) rows += r.count;
  return rows * p.col_count;
}

// Appends a tensor and returns its offset; an empty one adds nothing and returns -1.
auto Add(ParamLayout& l, std::string name, TensorPart part) -> int64_t {
  int64_t size = Size(part);
  if (size == 0) return -1;
  l.tensors.push_back({std::move(name), l.total, size, std::move(part)});
  l.total += size;
  return l.tensors.back().offset;
}

auto Block(ParamLayout& l, const Cut& k, int64_t i) -> BlockParams {
  const ModelConfig& c = k.c;
  bool gpt2 = c.arch == Arch::Gpt2;
  int64_t C = c.hidden, q = k.q(), kv = k.kv(), f = c.ffn;
  // Column-parallel QKV: this rank's query heads, and its key and value heads.
  std::vector<TensorPart::Rows> qkv{k.Mine(0, q), k.Mine(q, kv), k.Mine(q + kv, kv)};
  // Column-parallel fc (GPT-2) or gate and up (Llama): this rank's MLP columns.
  std::vector<TensorPart::Rows> fc{k.Mine(0, f)};
  if (!gpt2) fc.push_back(k.Mine(f, f));
  std::string p = "h." + std::to_string(i) + ".";
  BlockParams b{};
  b.ln1_w = Add(l, p + "ln_1.weight", Whole(C, 1));
  b.ln1_b = Add(l, p + "ln_1.bias", Whole(gpt2 ? C : 0, 1));
  b.qkv_w = Add(l, p + "attn.qkv.weight", RowsOf(c.qkv_dim(), C, qkv));
  b.qkv_b =
      Add(l, p + "attn.qkv.bias", RowsOf(gpt2 ? c.qkv_dim() : 0, 1, gpt2 ? qkv : std::vector<TensorPart::Rows>{}));
  b.proj_w = Add(l, p + "attn.proj.weight", ColumnsOf(C, q, k.t() * q / k.T(), q / k.T()));
  b.proj_b = Add(l, p + "attn.proj.bias", Whole(gpt2 ? C : 0, 1));
  b.ln2_w = Add(l, p + "ln_2.weight", Whole(C, 1));
  b.ln2_b = Add(l, p + "ln_2.bias", Whole(gpt2 ? C : 0, 1));
  b.fc_w = Add(l, p + (gpt2 ? "mlp.fc.weight" : "mlp.gate_up.weight"), RowsOf(c.mlp_in_dim(), C, fc));
  b.fc_b = Add(l, p + "mlp.fc.bias", RowsOf(gpt2 ? f : 0, 1, gpt2 ? fc : std::vector<TensorPart::Rows>{}));
  b.fcproj_w =
      Add(l, p + (gpt2 ? "mlp.proj.weight" : "mlp.down.weight"), ColumnsOf(C, f, k.t() * f / k.T(), f / k.T()));
  b.fcproj_b = Add(l, p + "mlp.proj.bias", Whole(gpt2 ? C : 0, 1));
  return b;
}

auto ChunksOf(const ModelConfig& c, const ShardSpec& s) -> std::vector<LayerRange> {
  return s.chunks.empty() ? std::vector<LayerRange>{{0, c.layers}} : s.chunks;
}

[[maybe_unused]] auto IsShardOf(const ModelConfig& c, const ShardSpec& s) -> bool {
  int64_t T = s.tensor_size;
  if (T < 1 || s.tensor_rank < 0 || s.tensor_rank >= T) return false;
  if (c.heads % T != 0 || c.kv_heads % T != 0 || c.ffn % T != 0 || c.vocab % T != 0) return false;
  for (const LayerRange& r : ChunksOf(c, s)) {
    if (r.first < 0 || r.count < 0 || r.first + r.count > c.layers) return false;
  }
  return true;
}

}  // namespace

auto TensorPart::FullIndex(int64_t local) const -> int64_t {
  int64_t row = local / col_count, col = local % col_count;
  for (const Rows& r : row_blocks) {
    if (row < r.count) return (r.first + row) * cols + col_first + col;
    row -= r.count;
  }
  return -1;
}

auto LayoutOf(const ModelConfig& c, const ShardSpec& s) -> ParamLayout {
  assert(IsShardOf(c, s));
  ParamLayout l;
  Cut k{c, s};
  bool gpt2 = c.arch == Arch::Gpt2;
  l.vocab_first = k.t() * c.vocab / k.T(), l.vocab_count = c.vocab / k.T();
  std::vector<TensorPart::Rows> vocab{k.Mine(0, c.vocab)};
  if (s.embedding) {
    l.wte = Add(l, "wte", RowsOf(c.vocab, c.hidden, vocab));
    l.wpe = Add(l, "wpe", Whole(gpt2 ? c.seq_len : 0, c.hidden));
  }
  for (const LayerRange& r : ChunksOf(c, s)) {
    l.chunk_first_block.push_back(static_cast<int64_t>(l.blocks.size()));
    for (int64_t i = r.first; i < r.first + r.count; ++i) {
      int64_t first = l.total;
      l.blocks.push_back(Block(l, k, i));
      l.block_ranges.push_back({first, l.total - first});
      l.block_layers.push_back(i);
    }
  }
  if (s.output) {
    l.lnf_w = Add(l, "ln_f.weight", Whole(c.hidden, 1));
    l.lnf_b = Add(l, "ln_f.bias", Whole(gpt2 ? c.hidden : 0, 1));
    // A tied model's last stage holds its own copy of wte, kept equal to the
    // first stage's by summing their gradients (the embedding group).
    bool copy = c.tied_embeddings && !s.embedding;
    if (!c.tied_embeddings || copy)
      l.lm_head = Add(l, copy ? "wte" : "lm_head.weight", RowsOf(c.vocab, c.hidden, vocab));
  }
  return l;
}

}  // namespace avf::model
