// The compute backend of the runtime: the memory the transformer's tensors
// live in and the kernels that run on it, behind one interface. The model
// (runtime/model) calls only this, never a concrete kernel, so a GPU backend
// (CUDA kernels in kernels/, GEMMs through cuBLAS) plugs in beside the CPU one
// without touching the model or the trainer. This folder is the interface
// only: implementations include it (runtime/cpu/cpu_backend.h), never the
// other way round. Kernel contracts are those of cpu/kernels.h: row-major
// activations, (out x in) weights, and every backward ADDS into its gradient
// outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "backend/element.h"
#include "backend/shapes.h"
#include "optim/optimizer.h"

namespace avf::backend {

enum class Kind { kCpu, kCuda };

auto KindName(Kind kind) -> std::string_view;

// Allocations and copies of one backend: host memory on the CPU, device memory
// on a GPU. Pointers it returns are only handed to this backend's kernels
// unless host_visible().
class Memory {
 public:
  virtual ~Memory() = default;
  virtual auto kind() const -> Kind = 0;
  // True when the host may read and write allocations directly (the trainer's
  // optimizer and checkpoints do so on the CPU backend).
  virtual auto host_visible() const -> bool = 0;
  // Zero-filled; exits with a clear message when the memory is not there
  // rather than returning null (callers cannot recover mid-step).
  virtual auto Allocate(size_t bytes) -> void* = 0;
  virtual void Free(void* p) = 0;
  virtual void CopyFromHost(void* dst, const void* host, size_t bytes) = 0;
  virtual void CopyToHost(void* host, const void* src, size_t bytes) = 0;
  virtual void Zero(void* dst, size_t bytes) = 0;
  // `rows` rows of `row_bytes`, from src + i*src_pitch to dst + i*dst_pitch
  // (splitting fused [q | k | v] rows, or joining their gradients).
  virtual void Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t row_bytes,
                      size_t rows) = 0;
  // Returns once all queued work is done (the CPU backend runs synchronously).
  virtual void Synchronize() = 0;
};

// The transformer's kernels on element type T, with the memory they use.
template <typename T>
class Kernels : public Memory {
 public:
  using AttentionShape = backend::AttentionShape;

  virtual void MatmulForward(T* out, const T* in, const T* weight, const T* bias, int64_t n, int64_t c, int64_t oc) = 0;
  virtual void MatmulBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, int64_t n,
                              int64_t c, int64_t oc) = 0;
  virtual void EmbeddingForward(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t b, int64_t t,
                                int64_t c, int64_t vocab_first, int64_t vocab_count) = 0;
  virtual void EmbeddingBackward(T* dwte, T* dwpe, const T* dout, const uint32_t* tokens, int64_t b, int64_t t,
                                 int64_t c, int64_t vocab_first, int64_t vocab_count) = 0;
  virtual void LayerNormForward(T* out, Wide<T>* mean, Wide<T>* rstd, const T* in, const T* weight, const T* bias,
                                int64_t n, int64_t c) = 0;
  virtual void LayerNormBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight,
                                 const Wide<T>* mean, const Wide<T>* rstd, int64_t n, int64_t c) = 0;
  virtual void RmsNormForward(T* out, Wide<T>* rstd, const T* in, const T* weight, int64_t n, int64_t c) = 0;
  virtual void RmsNormBackward(T* din, T* dweight, const T* dout, const T* in, const T* weight, const Wide<T>* rstd,
                               int64_t n, int64_t c) = 0;
  virtual void GeluForward(T* out, const T* in, int64_t n) = 0;
  virtual void GeluBackward(T* din, const T* in, const T* dout, int64_t n) = 0;
  virtual void SwigluForward(T* out, const T* gate, const T* up, int64_t n) = 0;
  virtual void SwigluBackward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) = 0;
  virtual void ResidualForward(T* out, const T* a, const T* b, int64_t n) = 0;
  virtual void ResidualBackward(T* da, T* db, const T* dout, int64_t n) = 0;
  virtual void RopeForward(T* x, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta) = 0;
  virtual void RopeBackward(T* dx, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta) = 0;
  // What AttentionForward keeps for AttentionBackward, in `state` of
  // AttentionStateBytes(s): the probabilities (B, NH, T, T) on the CPU, each
  // query row's log-sum-exp (B, NH, T) on a GPU, which recomputes them.
  // Backward also reads the forward's `out`.
  virtual auto AttentionStateBytes(const AttentionShape& s) const -> size_t = 0;
  virtual void AttentionForward(T* out, void* state, const T* q, const T* k, const T* v, const AttentionShape& s) = 0;
  virtual void AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* out, const void* state, const T* q,
                                 const T* k, const T* v, const AttentionShape& s) = 0;
  virtual void CrossEntropyStats(Wide<T>* row_max, Wide<T>* target_logit, const T* logits, const uint32_t* targets,
                                 int64_t n, int64_t v, int64_t vocab_first) = 0;
  virtual void CrossEntropySoftmax(T* probs, Wide<T>* row_sum, const T* logits, const Wide<T>* row_max, int64_t n,
                                   int64_t v) = 0;
  virtual void CrossEntropyFinish(Wide<T>* losses, T* probs, const Wide<T>* row_sum, const Wide<T>* row_max,
                                  const Wide<T>* target_logit, int64_t n, int64_t v) = 0;
  virtual void CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const Wide<T>* dlosses,
                                    int64_t n, int64_t v, int64_t vocab_first) = 0;
  virtual void MaxOverBlocks(Wide<T>* out, const Wide<T>* blocks, int64_t count, int64_t nblocks) = 0;

  // The step's element-wise work on the flat buffers, where they live.
  // The sum of x[i]^2 over `runs` (sorted runs of x's indices), in double:
  // the one value of the buffers a step reads back (the gradient norm).
  virtual auto SquaredNorm(const T* x, const std::vector<optim::ElementRun>& runs) -> double = 0;
  // x(N) *= scale, each element rounded once.
  virtual void Scale(T* x, int64_t n, float scale) = 0;
  // to(N) = from(N) rounded to T (the compute copy of an fp32 master).
  virtual void FromFloat(T* to, const float* from, int64_t n) = 0;
  // One AdamW update of master(N) (fp32) with grads(N) and the moments m(N),
  // v(N), as optim::UpdateElements with the scalars `s`; publish(N), when
  // not null, gets the updated master rounded to T (the compute copy).
  virtual void AdamW(float* master, const T* grads, float* m, float* v, int64_t n,
                     const std::vector<optim::ElementRun>& decayed, const optim::ElementScalars& s, T* publish) = 0;
};

}  // namespace avf::backend
