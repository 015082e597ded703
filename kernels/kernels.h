// CUDA kernels of the transformer and its optimizer: the GPU counterparts of
// runtime/cpu/kernels.h and runtime/optim/optimizer.h, with the same names,
// shapes and contracts (row-major activations, (out x in) weights; every
// backward ADDS into its gradient outputs). T is float or numeric::Bf16; the
// statistics and every sum are Wide<T> (float), as on the CPU, and a bf16
// output is rounded once (to nearest even). Pointers are device memory.
//
// Each call queues its kernels on `stream` and returns without waiting; the
// result is the launch's error (cudaSuccess, cudaErrorInvalidValue for a
// negative size or a shape the kernel does not take, or whatever the runtime
// reports, e.g. no device), never a crash. A kernel that needs scratch takes
// `workspace` of at least its ...WorkspaceBytes() (device memory the caller
// allocates once per shape). Results do not depend on the launch geometry:
// sums over rows run in a fixed order, never by atomics, so a step gives the
// same bits every time. Plain C++: host code includes this without nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/element.h"
#include "backend/shapes.h"
#include "optim/optimizer.h"

namespace avf::kernels {

using backend::AttentionShape;
using backend::Bf16;
using backend::Wide;

// ---- element-wise (pointwise.cu) ----

// out(N) = gelu(in(N)), the tanh approximation (GPT-2); din(N) += gelu'(in) dout.
template <typename T>
auto GeluForward(T* out, const T* in, int64_t n, cudaStream_t stream) -> cudaError_t;
template <typename T>
auto GeluBackward(T* din, const T* in, const T* dout, int64_t n, cudaStream_t stream) -> cudaError_t;
// out(N) = silu(gate) up; dgate += silu'(gate) up dout, dup += silu(gate) dout.
template <typename T>
auto SwigluForward(T* out, const T* gate, const T* up, int64_t n, cudaStream_t stream) -> cudaError_t;
template <typename T>
auto SwigluBackward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n, cudaStream_t stream)
    -> cudaError_t;
// out(N) = a + b; da += dout, db += dout.
template <typename T>
auto ResidualForward(T* out, const T* a, const T* b, int64_t n, cudaStream_t stream) -> cudaError_t;
template <typename T>
auto ResidualBackward(T* da, T* db, const T* dout, int64_t n, cudaStream_t stream) -> cudaError_t;
// Rotary embedding in place on x(B, T, heads, head_dim): pairs (2i, 2i+1)
// rotated by pos x theta^(-2i/head_dim), the angle in double as the CPU;
// backward rotates by minus the angle. head_dim odd: cudaErrorInvalidValue.
template <typename T>
auto RopeForward(T* x, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta, cudaStream_t stream)
    -> cudaError_t;
template <typename T>
auto RopeBackward(T* dx, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta, cudaStream_t stream)
    -> cudaError_t;
// to(N) = from(N) rounded to nearest even, and back (exact).
auto RoundToBf16(Bf16* to, const float* from, int64_t n, cudaStream_t stream) -> cudaError_t;
auto WidenBf16(float* to, const Bf16* from, int64_t n, cudaStream_t stream) -> cudaError_t;

// ---- embedding (embedding.cu) ----

// out(B*T x C) = wte[token - vocab_first] + wpe[t] (wpe may be null); a token
// outside [vocab_first, vocab_first + vocab_count) gives a zero row plus wpe.
template <typename T>
auto EmbeddingForward(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t b, int64_t t, int64_t c,
                      int64_t vocab_first, int64_t vocab_count, cudaStream_t stream) -> cudaError_t;
// dwte[token] += the sum of its rows of dout, dwpe[t] += the sum over the
// batch, each sum in fp32 in row order and added with one rounding.
auto EmbeddingBackwardWorkspaceBytes(int64_t b, int64_t t) -> size_t;
template <typename T>
auto EmbeddingBackward(T* dwte, T* dwpe, const T* dout, const uint32_t* tokens, int64_t b, int64_t t, int64_t c,
                       int64_t vocab_first, int64_t vocab_count, void* workspace, cudaStream_t stream) -> cudaError_t;

// ---- norms and column sums (norms.cu) ----

// dsum(C) += the column sums of rows(N x C), in fp32 over row blocks in a
// fixed order (the matmul's dbias).
auto ColumnSumsWorkspaceBytes(int64_t n, int64_t c) -> size_t;
template <typename T>
auto AddColumnSums(T* dsum, const T* rows, int64_t n, int64_t c, void* workspace, cudaStream_t stream) -> cudaError_t;
// LayerNorm (eps 1e-5) and RMSNorm (eps 1e-5) over C, per row; mean and rstd
// kept for backward. The backward's dweight/dbias are column sums as above.
auto NormBackwardWorkspaceBytes(int64_t n, int64_t c) -> size_t;
template <typename T>
auto LayerNormForward(T* out, Wide<T>* mean, Wide<T>* rstd, const T* in, const T* weight, const T* bias, int64_t n,
                      int64_t c, cudaStream_t stream) -> cudaError_t;
template <typename T>
auto LayerNormBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const Wide<T>* mean,
                       const Wide<T>* rstd, int64_t n, int64_t c, void* workspace, cudaStream_t stream) -> cudaError_t;
template <typename T>
auto RmsNormForward(T* out, Wide<T>* rstd, const T* in, const T* weight, int64_t n, int64_t c, cudaStream_t stream)
    -> cudaError_t;
template <typename T>
auto RmsNormBackward(T* din, T* dweight, const T* dout, const T* in, const T* weight, const Wide<T>* rstd, int64_t n,
                     int64_t c, void* workspace, cudaStream_t stream) -> cudaError_t;

// ---- softmax cross-entropy over a (vocab-parallel) head (cross_entropy.cu) ----
// The three forward parts and the backward of cpu/kernels.h, row by row.
template <typename T>
auto CrossEntropyStats(Wide<T>* row_max, Wide<T>* target_logit, const T* logits, const uint32_t* targets, int64_t n,
                       int64_t v, int64_t vocab_first, cudaStream_t stream) -> cudaError_t;
template <typename T>
auto CrossEntropySoftmax(T* probs, Wide<T>* row_sum, const T* logits, const Wide<T>* row_max, int64_t n, int64_t v,
                         cudaStream_t stream) -> cudaError_t;
template <typename T>
auto CrossEntropyFinish(Wide<T>* losses, T* probs, const Wide<T>* row_sum, const Wide<T>* row_max,
                        const Wide<T>* target_logit, int64_t n, int64_t v, cudaStream_t stream) -> cudaError_t;
template <typename T>
auto CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const Wide<T>* dlosses, int64_t n,
                          int64_t v, int64_t vocab_first, cudaStream_t stream) -> cudaError_t;
// out(count) = the max over b of blocks[b * count + i] (float).
auto MaxOverBlocks(float* out, const float* blocks, int64_t count, int64_t nblocks, cudaStream_t stream) -> cudaError_t;

// ---- causal attention, flash-style (attention.cu) ----
// q(B, T, NH, HD), k and v (B, T, KVH, HD), out(B, T, NH, HD); query head h
// reads key/value head h / (NH / KVH). No T x T matrix is kept: forward
// saves lse(B, NH, T), each query row's log-sum-exp of its scaled scores
// (fp32), and backward recomputes the probabilities from q, k and it.
// head_dim must be one AttentionTakesHeadDim accepts (else cudaErrorInvalidValue).
inline constexpr int kAttentionHeadDimStep = 8;
inline constexpr int kAttentionMaxHeadDim = 256;
constexpr auto AttentionTakesHeadDim(int64_t head_dim) -> bool {
  return head_dim >= 0 && head_dim % kAttentionHeadDimStep == 0 && head_dim <= kAttentionMaxHeadDim;
}
auto AttentionLseBytes(const AttentionShape& s) -> size_t;
template <typename T>
auto AttentionForward(T* out, float* lse, const T* q, const T* k, const T* v, const AttentionShape& s,
                      cudaStream_t stream) -> cudaError_t;
// dq += ..., dk += ..., dv += ... (each added with one rounding); `out` is
// the forward's output (for rowsum(dout * out)).
auto AttentionBackwardWorkspaceBytes(const AttentionShape& s) -> size_t;
template <typename T>
auto AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* out, const float* lse, const T* q, const T* k,
                       const T* v, const AttentionShape& s, void* workspace, cudaStream_t stream) -> cudaError_t;

// ---- the step's work on flat buffers (step.cu) ----

// A run of elements [first, first + count) of a flat buffer, with `before`
// the counts of the runs ahead of it (what the kernels binary-search);
// runs are sorted and disjoint (the backend builds them from the host's).
struct DeviceRun {
  int64_t first = 0, count = 0, before = 0;
};
// *out = the sum over `runs` of x[i]^2 (each square in double of the
// widened element, summed in double: per block, then the blocks in order).
auto SquaredNormWorkspaceBytes() -> size_t;
template <typename T>
auto SquaredNorm(double* out, const T* x, const DeviceRun* runs, int64_t run_count, int64_t counted, void* workspace,
                 cudaStream_t stream) -> cudaError_t;
// x(N) *= scale, rounded once.
template <typename T>
auto Scale(T* x, int64_t n, float scale, cudaStream_t stream) -> cudaError_t;
// One AdamW update of master(N) (fp32) with grads(N) (T, widened exactly)
// and the moments m(N), v(N): optim::AdamWElement per element with `s`
// (optim::ElementScalarsOf), weight decay (s.lr_decay) on the elements inside
// `decayed` (run_count runs, sorted; indices of this buffer), none elsewhere.
// publish(N), when not null, gets the updated master rounded to T.
template <typename T>
auto AdamWUpdate(float* master, const T* grads, float* m, float* v, int64_t n, const DeviceRun* decayed,
                 int64_t decayed_count, const optim::ElementScalars& s, T* publish, cudaStream_t stream) -> cudaError_t;

}  // namespace avf::kernels
