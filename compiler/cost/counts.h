// Parameter and FLOP counts of a GPT-2 or Llama transformer.
// Formulas and sources: docs/planner.md, "Parameters and FLOPs".
#pragma once

#include <vector>

#include "cost/shape.h"

namespace avf::cost {

struct ParamCounts {
  int64_t embedding = 0;     // token embedding (vocab x hidden)
  int64_t positions = 0;     // learned positions (GPT-2 only)
  int64_t per_layer = 0;     // one transformer block, norms and biases included
  int64_t layer_matmul = 0;  // the block's weight matrices (what FLOPs scale with)
  // Of per_layer, what every tensor rank keeps whole (norms, the biases of
  // row-parallel layers); the rest is split over the tensor group.
  int64_t layer_replicated = 0;
  int64_t final_norm = 0;
  int64_t output = 0;  // untied output projection; 0 when tied
  int64_t total = 0;
};

// ffn when the model leaves it out: 4h for GPT-2; Llama's 8h/3 rounded up to
// a multiple of 256 (Meta's reference model.py, multiple_of = 256).
auto DefaultFfn(Arch arch, int64_t hidden) -> int64_t;

auto CountParams(const ModelShape& m) -> ParamCounts;

// Parameters one tensor rank of pipeline stage `stage` holds (Megatron's
// split): its layers (cost/stages.h: the layers of its chunks_per_stage
// chunks), the vocab-parallel embedding on the first stage, the final norm
// and output projection (or the tied embedding's copy) on the last;
// positions and norms are replicated across the tensor group.
auto StageParamsPerRank(const ModelShape& m, int64_t pipeline, int64_t tensor, int64_t stage,
                        int64_t chunks_per_stage = 1) -> int64_t;

// StageParamsPerRank of every stage of layout `l` (plan.json `stage_parameters`).
auto StageParamsOfLayout(const ModelShape& m, const Layout& l) -> std::vector<int64_t>;

// Forward FLOPs of one token through the whole model: 2 per weight of every
// matrix (blocks and logits) plus attention scores and values over the full
// s x s matrix (Megatron's convention: no causal halving).
auto ForwardFlopsPerToken(const ModelShape& m) -> double;

// Model FLOPs per trained token (forward + backward = 3 x forward); the
// numerator of MFU. Recomputation is not counted here.
auto ModelFlopsPerToken(const ModelShape& m) -> double;

// Attention-core forward FLOPs of one token in one layer (QK^T and AV).
auto AttentionFlopsPerTokenLayer(const ModelShape& m) -> double;

}  // namespace avf::cost
