// The reference bench/train_cpu compares the runtime's transformer with: a
// straightforward OpenMP fp32 GPT-2, forward and backward (no optimizer),
// written here in the style of karpathy/llm.c's train_gpt2.c. Plain loops, no
// BLAS: a matmul is a loop over rows with an inner loop GCC vectorises, the
// attention is the T^2 loops, and OpenMP runs the matmuls, the attention and
// the softmax in parallel (the parts llm.c parallelises); the other kernels
// are serial, as in llm.c.
//
// It reads the SAME flat parameter buffer as avf::model::Transformer<float>
// (model/config.h LayoutOf: wte, wpe, per block ln_1, attn.qkv, attn.proj,
// ln_2, mlp.fc, mlp.proj, then ln_f; the LM head tied to wte) and writes its
// gradients in that layout, so the two can be compared tensor by tensor.
// Only GPT-2 with tied embeddings and heads == kv_heads.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace avf::bench {

class OmpGpt2 {
 public:
  // Throws std::invalid_argument for a config it does not cover.
  explicit OmpGpt2(const model::ModelConfig& config);

  // tokens and targets are batch x seq rows (seq <= config.seq_len);
  // returns the mean cross-entropy loss. params is laid out as layout().
  auto Forward(const float* params, const uint32_t* tokens, const uint32_t* targets, int64_t batch, int64_t seq)
      -> double;
  // Adds d(mean loss)/d(params) of the last Forward into gradients().
  void Backward(const float* params);
  void ZeroGradients();

  auto layout() const -> const model::ParamLayout& { return layout_; }
  auto gradients() const -> const std::vector<float>& { return grads_; }
  // The OpenMP threads a parallel region gets (omp_get_max_threads()).
  static auto Threads() -> int;

 private:
  // What one block keeps from forward for backward.
  struct Block {
    std::vector<float> ln1, mean1, rstd1, qkv, att, atty, x2, ln2, mean2, rstd2, fch, fch_gelu, out;
  };
  void BlockForward(const float* params, int64_t l, const float* in, Block& a);
  void BlockBackward(const float* params, int64_t l, const float* in, Block& a, const float* dout, float* din);

  model::ModelConfig config_;
  model::ParamLayout layout_;
  std::vector<float> grads_;
  int64_t batch_ = 0, seq_ = 0;
  std::vector<uint32_t> tokens_, targets_;
  std::vector<Block> blocks_;
  // x0: the embeddings; probs: softmax(logits), in place, then dlogits in place.
  std::vector<float> x0_, lnf_, lnf_mean_, lnf_rstd_, probs_, losses_;
};

}  // namespace avf::bench
