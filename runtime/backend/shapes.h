// The plain shapes that the backend interface's kernels take beside their
// pointers, shared by every implementation (runtime/cpu, kernels/).
#pragma once

#include <cstdint>

namespace avf::backend {

// Causal self-attention with grouped-query heads: q(B, T, NH, HD), k and v
// (B, T, KVH, HD); query head h reads key/value head h / (NH / KVH).
struct AttentionShape {
  int64_t b, t, heads, kv_heads, head_dim;
};

}  // namespace avf::backend
