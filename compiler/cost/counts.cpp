#include "cost/counts.h"

#include "cost/stages.h"

namespace avf::cost {

auto DefaultFfn(Arch arch, int64_t hidden) -> int64_t {
  if (arch == Arch::Gpt2) return 4 * hidden;
  int64_t raw = 8 * hidden / 3;
  return (raw + 255) / 256 * 256;
}

auto CountParams(const ModelShape& m) -> ParamCounts {
  ParamCounts c;
  int64_t h = m.hidden;
  int64_t kv_width = m.kv_heads * (h / m.heads);
  c.embedding = m.vocab * h;
  c.output = m.tied_embeddings ? 0 : m.vocab * h;
  if (m.arch == Arch::Gpt2) {
    // qkv and output projections with biases, GELU MLP with biases, 2 LayerNorms.
    c.positions = m.seq_len * h;
    c.layer_matmul = 4 * h * h + 2 * h * m.ffn;
    c.per_layer = c.layer_matmul + 4 * h + (m.ffn + h) + 4 * h;
    c.layer_replicated = 4 * h + 2 * h;  // two LayerNorms; attention-out and MLP-out biases
    c.final_norm = 2 * h;
  } else {
    // q, k, v, o without biases (k and v narrowed by GQA), SwiGLU MLP, 2 RMSNorms.
    c.layer_matmul = 2 * h * h + 2 * h * kv_width + 3 * h * m.ffn;
    c.per_layer = c.layer_matmul + 2 * h;
    c.layer_replicated = 2 * h;
    c.final_norm = h;
  }
  c.total = c.embedding + c.positions + m.layers * c.per_layer + c.final_norm + c.output;
  return c;
}

auto StageParamsPerRank(const ModelShape& m, int64_t pipeline, int64_t tensor, int64_t stage, int64_t chunks_per_stage)
    -> int64_t {
  ParamCounts c = CountParams(m);
  int64_t layers = StageLayers(m.layers, pipeline, chunks_per_stage, stage);
  int64_t split = layers * (c.per_layer - c.layer_replicated);
  int64_t whole = layers * c.layer_replicated;
  if (stage == 0) {
    split += c.embedding;
    whole += c.positions;
  }
  if (stage == pipeline - 1) {
    whole += c.final_norm;
    // Tied embeddings keep a copy on the last stage when it is not the first.
    split += c.output != 0 ? c.output : (pipeline > 1 ? c.embedding : 0);
  }
  return split / tensor + whole;
}

auto StageParamsOfLayout(const ModelShape& m, const Layout& l) -> std::vector<int64_t> {
  std::vector<int64_t> params;
  for (int64_t s = 0; s < l.pipeline; ++s) {
    params.push_back(StageParamsPerRank(m, l.pipeline, l.tensor, s, ChunksPerStage(l)));
  }
  return params;
}

auto AttentionFlopsPerTokenLayer(const ModelShape& m) -> double {
  // QK^T: 2 s h per token; softmax(.) V: 2 s h per token.
  return 4.0 * static_cast<double>(m.seq_len) * static_cast<double>(m.hidden);
}

auto ForwardFlopsPerToken(const ModelShape& m) -> double {
  ParamCounts c = CountParams(m);
  double matmul = static_cast<double>(m.layers) * static_cast<double>(c.layer_matmul) +
                  static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  return 2.0 * matmul + static_cast<double>(m.layers) * AttentionFlopsPerTokenLayer(m);
}

auto ModelFlopsPerToken(const ModelShape& m) -> double { return 3.0 * ForwardFlopsPerToken(m); }

}  // namespace avf::cost
