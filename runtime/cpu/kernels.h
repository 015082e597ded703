// CPU kernels of the GPT-2 and Llama transformers, forward and backward, in
// the layout of llm.c: activations are row-major (N = batch x sequence rows,
// C channels), a linear layer's weight is (out x in). Every backward kernel
// ADDS into its gradient outputs, so gradients accumulate over micro-batches
// and residual branches without extra copies. Templated on the element type:
// float for training, Bf16 for mixed precision, double for the
// finite-difference gradient checks. Matmuls go through detail::Gemm
// (gemm.h); the other loops are vectorised and threaded with OpenMP, and give
// the same bits on any thread count.
//
// Bf16 is mixed precision: tensors are bf16, every arithmetic is fp32 (each
// input widened exactly, sums, means, variances and softmax statistics kept
// in Wide<T> = float), and each output is rounded once when stored. A
// backward adds into a bf16 gradient with one rounding per element per call:
// a GEMM's beta = 1 adds the old value in fp32, and sums over rows (bias and
// norm weights, embedding rows, a key/value head's query heads) are taken in
// fp32 and then added. Two values are bf16 GEMM operands and so are rounded
// before the GEMM that reads them: attention's probabilities and dscores.
#pragma once

#include <cstdint>

#include "backend/element.h"
#include "backend/shapes.h"

namespace avf::cpu {

using backend::Wide;

// out(N x OC) = in(N x C) . weight(OC x C)^T + bias(OC); bias may be null.
template <typename T>
void MatmulForward(T* out, const T* in, const T* weight, const T* bias, int64_t n, int64_t c, int64_t oc);
// din += dout . weight; dweight += dout^T . in; dbias += column sums of dout
// (dbias may be null; din may be null when the input needs no gradient).
template <typename T>
void MatmulBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, int64_t n, int64_t c,
                    int64_t oc);

// out(B*T x C) = wte[token] + wpe[t]; wpe may be null (Llama: no learned
// positions). A vocab-parallel rank holds rows [vocab_first, vocab_first +
// vocab_count) of the embedding: `wte` starts at row vocab_first, and a token
// outside the range contributes a zero row (the tensor group's sum fills it).
template <typename T>
void EmbeddingForward(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t b, int64_t t, int64_t c,
                      int64_t vocab_first = 0, int64_t vocab_count = INT64_MAX);
template <typename T>
void EmbeddingBackward(T* dwte, T* dwpe, const T* dout, const uint32_t* tokens, int64_t b, int64_t t, int64_t c,
                       int64_t vocab_first = 0, int64_t vocab_count = INT64_MAX);

// LayerNorm over C with eps 1e-5; mean and rstd (per row) are kept for backward.
template <typename T>
void LayerNormForward(T* out, Wide<T>* mean, Wide<T>* rstd, const T* in, const T* weight, const T* bias, int64_t n,
                      int64_t c);
template <typename T>
void LayerNormBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const Wide<T>* mean,
                       const Wide<T>* rstd, int64_t n, int64_t c);

// RMSNorm (Llama) over C with eps 1e-5.
template <typename T>
void RmsNormForward(T* out, Wide<T>* rstd, const T* in, const T* weight, int64_t n, int64_t c);
template <typename T>
void RmsNormBackward(T* din, T* dweight, const T* dout, const T* in, const T* weight, const Wide<T>* rstd, int64_t n,
                     int64_t c);

// GELU, tanh approximation (GPT-2).
template <typename T>
void GeluForward(T* out, const T* in, int64_t n);
template <typename T>
void GeluBackward(T* din, const T* in, const T* dout, int64_t n);

// SwiGLU (Llama MLP): out = silu(gate) * up.
template <typename T>
void SwigluForward(T* out, const T* gate, const T* up, int64_t n);
template <typename T>
void SwigluBackward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n);

// out = a + b; backward adds dout into both.
template <typename T>
void ResidualForward(T* out, const T* a, const T* b, int64_t n);
template <typename T>
void ResidualBackward(T* da, T* db, const T* dout, int64_t n);

// Rotary position embedding in place on x(B, T, heads, head_dim), pairs
// (2i, 2i+1) rotated by t * theta^(-2i/head_dim) (Meta's Llama layout).
// Backward rotates the gradient back (the inverse rotation), in place.
template <typename T>
void RopeForward(T* x, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta);
template <typename T>
void RopeBackward(T* dx, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta);

// Causal self-attention with grouped-query heads: q(B, T, NH, HD), k and v
// (B, T, KVH, HD), query head h reads key/value head h / (NH / KVH).
// att(B, NH, T, T) keeps the probabilities for backward (zero above the
// diagonal); out(B, T, NH, HD). The scores and their softmax are computed in
// Wide<T> scratch; out = att . v reads the stored (for bf16, rounded) att.
using AttentionShape = backend::AttentionShape;
template <typename T>
void AttentionForward(T* out, T* att, const T* q, const T* k, const T* v, const AttentionShape& s);
template <typename T>
void AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* att, const T* q, const T* k, const T* v,
                       const AttentionShape& s);

// Softmax cross-entropy: probs(N x V) = softmax(logits), losses[n] =
// -log probs[n, target[n]]. Backward adds (probs - onehot) * dloss[n]. For
// bf16 the probabilities are rounded twice (the unnormalised exponentials are
// stored between Softmax and Finish below); the sums are of fp32 values.
template <typename T>
void CrossEntropyForward(Wide<T>* losses, T* probs, const T* logits, const uint32_t* targets, int64_t n, int64_t v);
// The same over a vocab-parallel shard: logits (N x V) are this rank's
// columns [vocab_first, vocab_first + V) of the full logits. Forward runs in
// three parts with the tensor group's reductions between them:
//   Stats: each row's max over the shard, and its target's logit (0 when the
//          target is another rank's); the group takes the max of the maxes
//          and sums the target logits.
//   Softmax: probs = exp(logits - max) and their row sums; the group sums them.
//   Finish: losses = log(sum) + max - target logit, probs /= sum.
template <typename T>
void CrossEntropyStats(Wide<T>* row_max, Wide<T>* target_logit, const T* logits, const uint32_t* targets, int64_t n,
                       int64_t v, int64_t vocab_first);
template <typename T>
void CrossEntropySoftmax(T* probs, Wide<T>* row_sum, const T* logits, const Wide<T>* row_max, int64_t n, int64_t v);
template <typename T>
void CrossEntropyFinish(Wide<T>* losses, T* probs, const Wide<T>* row_sum, const Wide<T>* row_max,
                        const Wide<T>* target_logit, int64_t n, int64_t v);
template <typename T>
void CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const Wide<T>* dlosses, int64_t n,
                          int64_t v, int64_t vocab_first = 0);

// out[i] = max over b of blocks[b * count + i]: the max of the tensor
// group's gathered row maxima (float or double: a Wide<T> statistic).
template <typename T>
void MaxOverBlocks(T* out, const T* blocks, int64_t count, int64_t nblocks);

// Wall time spent inside the BLAS GEMMs since the last reset, summed over
// calls (for bench/train_cpu: the share of a step the GEMMs take).
auto GemmSeconds() -> double;
auto GemmFlops() -> double;
void ResetGemmCounters();

}  // namespace avf::cpu
