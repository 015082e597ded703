// The CPU backend: host memory, and the kernels of runtime/cpu.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cpu/cpu_backend.h"
#include "cpu/kernels.h"
#include "optim/optimizer.h"

namespace avf::cpu {

namespace {

using backend::Kernels;
using backend::Kind;

// The step's element-wise loops start an OpenMP team only above this many
// elements, as the optimizer does: smaller buffers are not worth a team.
constexpr int64_t kThreadedElements = 1 << 20;

template <typename T>
class CpuKernels final : public Kernels<T> {
 public:
  using typename Kernels<T>::AttentionShape;

  auto kind() const -> Kind override { return Kind::kCpu; }
  auto host_visible() const -> bool override { return true; }
  auto Allocate(size_t bytes) -> void* override {
    void* p = std::calloc(1, bytes);
    if (p) return p;
    std::fprintf(stderr, "%s\n",
                 fmt::format("avf-run: error: out of memory: cannot allocate {:.3f} GiB of host memory for the "
                             "model; use a smaller model or micro-batch, or more ranks",
                             static_cast<double>(bytes) / (1 << 30))
                     .c_str());
    std::exit(1);
  }
  void Free(void* p) override { std::free(p); }
  void CopyFromHost(void* dst, const void* host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void CopyToHost(void* host, const void* src, size_t bytes) override { std::memcpy(host, src, bytes); }
  void Zero(void* dst, size_t bytes) override { std::memset(dst, 0, bytes); }
  void Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t row_bytes, size_t rows) override {
    for (size_t i = 0; i < rows; ++i) {
      std::memcpy(static_cast<char*>(dst) + i * dst_pitch, static_cast<const char*>(src) + i * src_pitch, row_bytes);
    }
  }
  void Synchronize() override {}

  void MatmulForward(T* out, const T* in, const T* w, const T* bias, int64_t n, int64_t c, int64_t oc) override {
    cpu::MatmulForward(out, in, w, bias, n, c, oc);
  }
  void MatmulBackward(T* din, T* dw, T* db, const T* dout, const T* in, const T* w, int64_t n, int64_t c,
                      int64_t oc) override {
    cpu::MatmulBackward(din, dw, db, dout, in, w, n, c, oc);
  }
  void EmbeddingForward(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t b, int64_t t, int64_t c,
                        int64_t vocab_first, int64_t vocab_count) override {
    cpu::EmbeddingForward(out, tokens, wte, wpe, b, t, c, vocab_first, vocab_count);
  }
  void EmbeddingBackward(T* dwte, T* dwpe, const T* dout, const uint32_t* tokens, int64_t b, int64_t t, int64_t c,
                         int64_t vocab_first, int64_t vocab_count) override {
    cpu::EmbeddingBackward(dwte, dwpe, dout, tokens, b, t, c, vocab_first, vocab_count);
  }
  void LayerNormForward(T* out, Wide<T>* mean, Wide<T>* rstd, const T* in, const T* w, const T* bias, int64_t n,
                        int64_t c) override {
    cpu::LayerNormForward(out, mean, rstd, in, w, bias, n, c);
  }
  void LayerNormBackward(T* din, T* dw, T* db, const T* dout, const T* in, const T* w, const Wide<T>* mean,
                         const Wide<T>* rstd, int64_t n, int64_t c) override {
    cpu::LayerNormBackward(din, dw, db, dout, in, w, mean, rstd, n, c);
  }
  void RmsNormForward(T* out, Wide<T>* rstd, const T* in, const T* w, int64_t n, int64_t c) override {
    cpu::RmsNormForward(out, rstd, in, w, n, c);
  }
  void RmsNormBackward(T* din, T* dw, const T* dout, const T* in, const T* w, const Wide<T>* rstd, int64_t n,
                       int64_t c) override {
    cpu::RmsNormBackward(din, dw, dout, in, w, rstd, n, c);
  }
  void GeluForward(T* out, const T* in, int64_t n) override { cpu::GeluForward(out, in, n); }
  void GeluBackward(T* din, const T* in, const T* dout, int64_t n) override { cpu::GeluBackward(din, in, dout, n); }
  void SwigluForward(T* out, const T* gate, const T* up, int64_t n) override { cpu::SwigluForward(out, gate, up, n); }
  void SwigluBackward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) override {
    cpu::SwigluBackward(dgate, dup, dout, gate, up, n);
  }
  void ResidualForward(T* out, const T* a, const T* b, int64_t n) override { cpu::ResidualForward(out, a, b, n); }
  void ResidualBackward(T* da, T* db, const T* dout, int64_t n) override { cpu::ResidualBackward(da, db, dout, n); }
  void RopeForward(T* x, int64_t b, int64_t t, int64_t heads, int64_t hd, double theta) override {
    cpu::RopeForward(x, b, t, heads, hd, theta);
  }
  void RopeBackward(T* dx, int64_t b, int64_t t, int64_t heads, int64_t hd, double theta) override {
    cpu::RopeBackward(dx, b, t, heads, hd, theta);
  }
  auto AttentionStateBytes(const AttentionShape& s) const -> size_t override {
    return static_cast<size_t>(s.b * s.heads * s.t * s.t) * sizeof(T);
  }
  void AttentionForward(T* out, void* state, const T* q, const T* k, const T* v, const AttentionShape& s) override {
    cpu::AttentionForward(out, static_cast<T*>(state), q, k, v, s);
  }
  void AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* /*out*/, const void* state, const T* q,
                         const T* k, const T* v, const AttentionShape& s) override {
    cpu::AttentionBackward(dq, dk, dv, dout, static_cast<const T*>(state), q, k, v, s);
  }
  void CrossEntropyStats(Wide<T>* row_max, Wide<T>* target_logit, const T* logits, const uint32_t* targets, int64_t n,
                         int64_t v, int64_t vocab_first) override {
    cpu::CrossEntropyStats(row_max, target_logit, logits, targets, n, v, vocab_first);
  }
  void CrossEntropySoftmax(T* probs, Wide<T>* row_sum, const T* logits, const Wide<T>* row_max, int64_t n,
                           int64_t v) override {
    cpu::CrossEntropySoftmax(probs, row_sum, logits, row_max, n, v);
  }
  void CrossEntropyFinish(Wide<T>* losses, T* probs, const Wide<T>* row_sum, const Wide<T>* row_max,
                          const Wide<T>* target_logit, int64_t n, int64_t v) override {
    cpu::CrossEntropyFinish(losses, probs, row_sum, row_max, target_logit, n, v);
  }
  void CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const Wide<T>* dlosses, int64_t n,
                            int64_t v, int64_t vocab_first) override {
    cpu::CrossEntropyBackward(dlogits, probs, targets, dlosses, n, v, vocab_first);
  }
  void MaxOverBlocks(Wide<T>* out, const Wide<T>* blocks, int64_t count, int64_t nblocks) override {
    cpu::MaxOverBlocks<Wide<T>>(out, blocks, count, nblocks);
  }
  auto SquaredNorm(const T* x, const std::vector<optim::ElementRun>& runs) -> double override {
    return optim::SquaredNorm(x, runs);
  }
  void Scale(T* x, int64_t n, float scale) override {
#pragma omp parallel for schedule(static) if (n > kThreadedElements)
    for (int64_t i = 0; i < n; ++i) x[i] = backend::Narrow<T>(backend::Widen(x[i]) * scale);
  }
  void FromFloat(T* to, const float* from, int64_t n) override {
#pragma omp parallel for schedule(static) if (n > kThreadedElements)
    for (int64_t i = 0; i < n; ++i) to[i] = backend::Narrow<T>(from[i]);
  }
  void AdamW(float* master, const T* grads, float* m, float* v, int64_t n,
             const std::vector<optim::ElementRun>& decayed, const optim::ElementScalars& s, T* publish) override {
    optim::UpdateElements(master, grads, m, v, n, decayed, s);
    if (publish) FromFloat(publish, master, n);
  }
};

}  // namespace

template <typename T>
auto Backend() -> Kernels<T>& {
  static CpuKernels<T> instance;
  return instance;
}

template auto Backend<float>() -> Kernels<float>&;
template auto Backend<double>() -> Kernels<double>&;
template auto Backend<backend::Bf16>() -> Kernels<backend::Bf16>&;

}  // namespace avf::cpu
