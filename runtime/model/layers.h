// The layers of the sharded transformer (transformer.h), as free functions
// over one LayerContext: the block (attention and MLP, Megatron-style tensor
// parallel, optionally sequence parallel), the vocab-parallel embedding and
// the output head with its vocab-parallel cross-entropy. Internal to
// runtime/model.
//
// Rows: a micro-batch has n = batch x seq rows. Inside a tensor-parallel
// region every rank works on all n rows; between the regions (the residual
// stream, the norms) a rank holds rows() of them: n, or n / T with sequence
// parallelism, where the region's input is all-gathered and its output
// reduce-scattered instead of all-reduced.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/buffer.h"
#include "model/config.h"
#include "model/tensor_group.h"

namespace avf::model {

template <typename T>
using Buffer = backend::Buffer<T>;
using backend::Wide;

// What one block keeps from forward for backward. `in` is the previous
// block's output (or the chunk's input), not a copy. With sequence
// parallelism the norms' outputs are kept as row shards and gathered again
// in backward.
template <typename T>
struct BlockActs {
  const T* in = nullptr;
  Buffer<T> ln1, q, k, v, attn, x2, ln2, h, act, out;
  Buffer<Wide<T>> mean1, rstd1, mean2, rstd2;
  Buffer<uint8_t> attention;  // the backend's attention state (Kernels::AttentionStateBytes)
};

template <typename T>
struct HeadActs {
  Buffer<T> lnf, probs;
  Buffer<Wide<T>> mean, rstd, losses;
};

// Scratch shared by every block and slot (one layer runs at a time).
template <typename T>
struct Workspace {
  Buffer<T> qkv, full, partial, rows, gate, up;                                                  // forward
  Buffer<T> dfull, dpartial, drows, dx2, dz, dy, dact, dh, dattn, dq, dk, dv, dqkv, dgate, dup;  // backward
  Buffer<T> logits;                                                                              // head
  Buffer<Wide<T>> row_max, maxes, target, row_sum, dlosses;
};

// Where the element at a flat-buffer offset lives: in the whole buffer, or
// (ZeRO 2 and 3: the rank holds no whole buffer) in the window of its
// segment — the tensors before the first block (`front`), the block being
// computed, or the tensors after the last block (`back`).
template <typename T>
struct StateView {
  T* flat = nullptr;  // the whole buffer; null when windowed
  T* front = nullptr;
  int64_t front_end = 0;
  T* block = nullptr;
  int64_t block_first = 0;
  T* back = nullptr;
  int64_t back_first = 0;

  auto At(int64_t offset) const -> T* {
    if (offset < 0) return nullptr;
    if (flat) return flat + offset;
    if (offset < front_end) return front + offset;
    if (offset >= back_first) return back + (offset - back_first);
    return block + (offset - block_first);
  }
};

template <typename T>
struct LayerContext {
  const ModelConfig& config;
  const ParamLayout& layout;
  backend::Kernels<T>& k;
  TensorGroup& tp;
  bool sequence_parallel;
  StateView<T> params;
  StateView<T> grads;
  Workspace<T>& w;
  int64_t batch = 0, seq = 0;

  auto n() const -> int64_t { return batch * seq; }
  auto rows() const -> int64_t { return sequence_parallel ? n() / tp.size() : n(); }
  auto P(int64_t offset) const -> T* { return params.At(offset); }
  auto G(int64_t offset) const -> T* { return grads.At(offset); }
  auto Alloc(int64_t count) const -> Buffer<T> { return Buffer<T>(k, static_cast<size_t>(count)); }
  auto AllocWide(int64_t count) const -> Buffer<Wide<T>> { return Buffer<Wide<T>>(k, static_cast<size_t>(count)); }
};

template <typename T>
void ReserveBlock(const LayerContext<T>& x, BlockActs<T>& a);
template <typename T>
void ReserveHead(const LayerContext<T>& x, HeadActs<T>& h);
template <typename T>
void ReserveWorkspace(const LayerContext<T>& x);

// x and out: rows() x hidden.
template <typename T>
void BlockForward(const LayerContext<T>& x, const BlockParams& p, const T* in, BlockActs<T>& a);
// dx (zeroed by the caller) gets d(loss)/d(in) from dout; both rows() x hidden.
template <typename T>
void BlockBackward(const LayerContext<T>& x, const BlockParams& p, BlockActs<T>& a, const T* dout, T* dx);

// tokens: n on the backend; out: rows() x hidden.
template <typename T>
void EmbedForward(const LayerContext<T>& x, const uint32_t* tokens, T* out);
template <typename T>
void EmbedBackward(const LayerContext<T>& x, const uint32_t* tokens, const T* dout);

// The final norm, the output projection and the mean cross-entropy of the n
// rows (the same value on every tensor rank).
template <typename T>
auto HeadForward(const LayerContext<T>& x, const T* in, const uint32_t* targets, HeadActs<T>& h) -> double;
// dx (zeroed by the caller) gets d(mean loss)/d(in).
template <typename T>
void HeadBackward(const LayerContext<T>& x, const T* in, const uint32_t* targets, HeadActs<T>& h, T* dx);

}  // namespace avf::model
