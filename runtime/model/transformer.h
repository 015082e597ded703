// The GPT-2 / Llama transformer on a compute backend (backend/backend.h):
// forward with the mean cross-entropy loss, and backward into a flat gradient
// buffer laid out like the parameters (model/config.h). Single rank; the
// parallel execution of a plan builds on it. Gradients ACCUMULATE (call
// ZeroGradients between steps), so micro-batches add up. Activations and
// workspaces are allocated once per (batch, seq) shape and reused.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/buffer.h"
#include "model/config.h"

namespace avf::model {

template <typename T>
class Transformer {
 public:
  template <typename E>
  using Buffer = backend::Buffer<E>;

  explicit Transformer(ModelConfig config, backend::Kernels<T>& kernels = backend::Cpu<T>());

  // GPT-2-style initialisation: N(0, 0.02), residual projections scaled by
  // 1/sqrt(2 x layers), biases 0, norm weights 1. The same seed gives the
  // same parameters on every machine (mt19937 and our own Box-Muller).
  void Initialize(uint64_t seed);

  // tokens and targets are batch x seq rows on the host (seq <= config.seq_len);
  // returns the mean loss over the batch x seq positions. Keeps what backward needs.
  auto Forward(const uint32_t* tokens, const uint32_t* targets, int64_t batch, int64_t seq) -> double;
  // Adds d(mean loss)/d(parameters) of the last Forward into gradients().
  void Backward();
  void ZeroGradients();

  auto config() const -> const ModelConfig& { return config_; }
  auto layout() const -> const ParamLayout& { return layout_; }
  auto kernels() -> backend::Kernels<T>& { return k_; }
  // In the backend's memory: host-visible on the CPU backend.
  auto parameters() -> Buffer<T>& { return params_; }
  auto gradients() -> Buffer<T>& { return grads_; }

 private:
  // What one block keeps from forward for backward; `in` is the previous
  // block's output (or the embeddings), not a copy.
  struct BlockActs {
    const T* in = nullptr;
    Buffer<T> ln1, mean1, rstd1, q, k, v, att, attn, x2, ln2, mean2, rstd2, h, act, out;
  };
  // Scratch shared by all blocks: forward temporaries and backward gradients.
  struct Workspace {
    Buffer<T> qkv, tmp, gate, up, dx2, dmlp, dact, dh, dln2, dattn, dproj, dq, dk, dv, dqkv, dln1, dgate, dup;
  };
  void Reserve(int64_t batch, int64_t seq);
  void ReserveBlock(BlockActs& a);
  void BlockForward(int64_t i, const T* x, BlockActs& a);
  void MlpForward(const BlockParams& p, BlockActs& a);
  void BlockBackward(int64_t i, BlockActs& a, const T* dout, T* dx);
  void MlpBackward(const BlockParams& p, BlockActs& a, const T* dout);
  void AttentionBackward(const BlockParams& p, BlockActs& a);
  void Norm(const T* in, int64_t w, int64_t b, T* out, T* mean, T* rstd);
  void NormBackward(T* din, const T* dout, const T* in, int64_t w, int64_t b, const T* mean, const T* rstd);
  // Copies column block [col, col + width) of rows (n x row_width) into dense
  // (n x width), or back when `to_rows`.
  void CopyColumns(T* rows, int64_t row_width, int64_t col, T* dense, int64_t width, bool to_rows);
  auto P(int64_t offset) -> T* { return offset < 0 ? nullptr : params_.data() + offset; }
  auto G(int64_t offset) -> T* { return offset < 0 ? nullptr : grads_.data() + offset; }
  auto Alloc(int64_t count) -> Buffer<T> { return Buffer<T>(k_, static_cast<size_t>(count)); }

  ModelConfig config_;
  ParamLayout layout_;
  backend::Kernels<T>& k_;
  Buffer<T> params_, grads_;
  int64_t batch_ = 0, seq_ = 0;
  Buffer<uint32_t> tokens_, targets_;
  std::vector<BlockActs> acts_;
  Workspace w_;
  Buffer<T> embedded_, lnf_, lnf_mean_, lnf_rstd_, logits_, probs_, losses_, dlosses_, dlnf_, dx_, dprev_;
};

}  // namespace avf::model
