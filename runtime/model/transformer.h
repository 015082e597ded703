// The GPT-2 / Llama transformer on the CPU kernels: forward with the mean
// cross-entropy loss, and backward into a flat gradient buffer laid out like
// the parameters (model/config.h). Single rank; the parallel execution of a
// plan builds on it. Gradients ACCUMULATE (call ZeroGradients between steps),
// so micro-batches add up.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace avf::model {

template <typename T>
class Transformer {
 public:
  explicit Transformer(ModelConfig config);

  // GPT-2-style initialisation: N(0, 0.02), residual projections scaled by
  // 1/sqrt(2 x layers), biases 0, norm weights 1. The same seed gives the
  // same parameters on every machine (mt19937 and our own Box-Muller).
  void Initialize(uint64_t seed);

  // tokens and targets are batch x seq rows (seq <= config.seq_len); returns
  // the mean loss over the batch x seq positions. Keeps what backward needs.
  auto Forward(const uint32_t* tokens, const uint32_t* targets, int64_t batch, int64_t seq) -> double;
  // Adds d(mean loss)/d(parameters) of the last Forward into gradients().
  void Backward();
  void ZeroGradients();

  auto config() const -> const ModelConfig& { return config_; }
  auto layout() const -> const ParamLayout& { return layout_; }
  auto parameters() -> std::vector<T>& { return params_; }
  auto gradients() -> std::vector<T>& { return grads_; }

 private:
  // What one block keeps from forward for backward.
  struct BlockActs {
    std::vector<T> in, ln1, mean1, rstd1, q, k, v, att, attn, x2, ln2, mean2, rstd2, h, act, out;
  };
  void BlockForward(int64_t i, const T* x, BlockActs& a);
  void BlockBackward(int64_t i, BlockActs& a, const T* dout, T* dx);
  void Norm(const T* in, int64_t w, int64_t b, T* out, T* mean, T* rstd);
  void NormBackward(T* din, const T* dout, const T* in, int64_t w, int64_t b, const T* mean, const T* rstd);
  auto P(int64_t offset) -> T* { return offset < 0 ? nullptr : params_.data() + offset; }
  auto G(int64_t offset) -> T* { return offset < 0 ? nullptr : grads_.data() + offset; }

  ModelConfig config_;
  ParamLayout layout_;
  std::vector<T> params_, grads_;
  int64_t batch_ = 0, seq_ = 0;
  std::vector<uint32_t> tokens_, targets_;
  std::vector<BlockActs> acts_;
  std::vector<T> x_final_, lnf_, lnf_mean_, lnf_rstd_, logits_probs_, losses_;
};

}  // namespace avf::model
