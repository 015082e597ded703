// The model reaches memory only through its backend (runtime/backend): a
// backend whose memory the host may not touch, and that checks every pointer
// a kernel gets lies inside one of its own allocations, runs the transformer
// to the same loss and gradients as the CPU backend. A GPU backend plugs into
// the same seam, so this is what keeps the model from growing host-only code.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "model/transformer.h"

namespace avf::backend {
namespace {

using cpu::Backend;
using model::Arch;
using model::ModelConfig;

// Wraps the CPU kernels; not host-visible; records stray pointers and leaks.
class CheckedBackend final : public Kernels<double> {
 public:
  ~CheckedBackend() override { EXPECT_TRUE(live_.empty()) << live_.size() << " allocations leaked"; }
  auto strays() const -> int { return strays_; }
  auto kernel_calls() const -> int { return calls_; }

  auto kind() const -> Kind override { return Kind::kCuda; }
  auto host_visible() const -> bool override { return false; }
  auto Allocate(size_t bytes) -> void* override {
    void* p = cpu_.Allocate(bytes);
    live_[static_cast<char*>(p)] = bytes;
    return p;
  }
  void Free(void* p) override {
    EXPECT_EQ(live_.erase(static_cast<char*>(p)), 1u) << "freeing memory this backend did not allocate";
    cpu_.Free(p);
  }
  void CopyFromHost(void* dst, const void* host, size_t bytes) override {
    Check(dst, bytes);
    cpu_.CopyFromHost(dst, host, bytes);
  }
  void CopyToHost(void* host, const void* src, size_t bytes) override {
    Check(src, bytes);
    cpu_.CopyToHost(host, src, bytes);
  }
  void Zero(void* dst, size_t bytes) override {
    Check(dst, bytes);
    cpu_.Zero(dst, bytes);
  }
  void Copy2D(void* dst, size_t dp, const void* src, size_t sp, size_t row, size_t rows) override {
    Check(dst, dp * (rows - 1) + row), Check(src, sp * (rows - 1) + row);
    cpu_.Copy2D(dst, dp, src, sp, row, rows);
  }
  void Synchronize() override {}

  using D = double;
  void MatmulForward(D* o, const D* i, const D* w, const D* b, int64_t n, int64_t c, int64_t oc) override {
    Kernel({o, i, w, b}), cpu_.MatmulForward(o, i, w, b, n, c, oc);
  }
  void MatmulBackward(D* di, D* dw, D* db, const D* dy, const D* i, const D* w, int64_t n, int64_t c,
                      int64_t oc) override {
    Kernel({di, dw, db, dy, i, w}), cpu_.MatmulBackward(di, dw, db, dy, i, w, n, c, oc);
  }
  void EmbeddingForward(D* o, const uint32_t* t, const D* wte, const D* wpe, int64_t b, int64_t s, int64_t c,
                        int64_t vf, int64_t vc) override {
    Kernel({o, t, wte, wpe}), cpu_.EmbeddingForward(o, t, wte, wpe, b, s, c, vf, vc);
  }
  void EmbeddingBackward(D* dwte, D* dwpe, const D* dy, const uint32_t* t, int64_t b, int64_t s, int64_t c, int64_t vf,
                         int64_t vc) override {
    Kernel({dwte, dwpe, dy, t}), cpu_.EmbeddingBackward(dwte, dwpe, dy, t, b, s, c, vf, vc);
  }
  void LayerNormForward(D* o, D* m, D* r, const D* i, const D* w, const D* b, int64_t n, int64_t c) override {
    Kernel({o, m, r, i, w, b}), cpu_.LayerNormForward(o, m, r, i, w, b, n, c);
  }
  void LayerNormBackward(D* di, D* dw, D* db, const D* dy, const D* i, const D* w, const D* m, const D* r, int64_t n,
                         int64_t c) override {
    Kernel({di, dw, db, dy, i, w, m, r}), cpu_.LayerNormBackward(di, dw, db, dy, i, w, m, r, n, c);
  }
  void RmsNormForward(D* o, D* r, const D* i, const D* w, int64_t n, int64_t c) override {
    Kernel({o, r, i, w}), cpu_.RmsNormForward(o, r, i, w, n, c);
  }
  void RmsNormBackward(D* di, D* dw, const D* dy, const D* i, const D* w, const D* r, int64_t n, int64_t c) override {
    Kernel({di, dw, dy, i, w, r}), cpu_.RmsNormBackward(di, dw, dy, i, w, r, n, c);
  }
  void GeluForward(D* o, const D* i, int64_t n) override { Kernel({o, i}), cpu_.GeluForward(o, i, n); }
  void GeluBackward(D* di, const D* i, const D* dy, int64_t n) override {
    Kernel({di, i, dy}), cpu_.GeluBackward(di, i, dy, n);
  }
  void SwigluForward(D* o, const D* g, const D* u, int64_t n) override {
    Kernel({o, g, u}), cpu_.SwigluForward(o, g, u, n);
  }
  void SwigluBackward(D* dg, D* du, const D* dy, const D* g, const D* u, int64_t n) override {
    Kernel({dg, du, dy, g, u}), cpu_.SwigluBackward(dg, du, dy, g, u, n);
  }
  void ResidualForward(D* o, const D* a, const D* b, int64_t n) override {
    Kernel({o, a, b}), cpu_.ResidualForward(o, a, b, n);
  }
  void ResidualBackward(D* da, D* db, const D* dy, int64_t n) override {
    Kernel({da, db, dy}), cpu_.ResidualBackward(da, db, dy, n);
  }
  void RopeForward(D* x, int64_t b, int64_t t, int64_t h, int64_t hd, double theta) override {
    Kernel({x}), cpu_.RopeForward(x, b, t, h, hd, theta);
  }
  void RopeBackward(D* dx, int64_t b, int64_t t, int64_t h, int64_t hd, double theta) override {
    Kernel({dx}), cpu_.RopeBackward(dx, b, t, h, hd, theta);
  }
  auto AttentionStateBytes(const AttentionShape& s) const -> size_t override { return cpu_.AttentionStateBytes(s); }
  void AttentionForward(D* o, void* att, const D* q, const D* k, const D* v, const AttentionShape& s) override {
    Kernel({o, att, q, k, v}), cpu_.AttentionForward(o, att, q, k, v, s);
  }
  void AttentionBackward(D* dq, D* dk, D* dv, const D* dy, const D* o, const void* att, const D* q, const D* k,
                         const D* v, const AttentionShape& s) override {
    Kernel({dq, dk, dv, dy, o, att, q, k, v}), cpu_.AttentionBackward(dq, dk, dv, dy, o, att, q, k, v, s);
  }
  void CrossEntropyStats(D* m, D* tl, const D* z, const uint32_t* t, int64_t n, int64_t v, int64_t vf) override {
    Kernel({m, tl, z, t}), cpu_.CrossEntropyStats(m, tl, z, t, n, v, vf);
  }
  void CrossEntropySoftmax(D* p, D* sum, const D* z, const D* m, int64_t n, int64_t v) override {
    Kernel({p, sum, z, m}), cpu_.CrossEntropySoftmax(p, sum, z, m, n, v);
  }
  void CrossEntropyFinish(D* l, D* p, const D* sum, const D* m, const D* tl, int64_t n, int64_t v) override {
    Kernel({l, p, sum, m, tl}), cpu_.CrossEntropyFinish(l, p, sum, m, tl, n, v);
  }
  void CrossEntropyBackward(D* dz, const D* p, const uint32_t* t, const D* dl, int64_t n, int64_t v,
                            int64_t vf) override {
    Kernel({dz, p, t, dl}), cpu_.CrossEntropyBackward(dz, p, t, dl, n, v, vf);
  }
  void MaxOverBlocks(D* o, const D* b, int64_t count, int64_t nb) override {
    Kernel({o, b}), cpu_.MaxOverBlocks(o, b, count, nb);
  }
  auto SquaredNorm(const D* x, const std::vector<optim::ElementRun>& runs) -> double override {
    Kernel({x});
    return cpu_.SquaredNorm(x, runs);
  }
  void Scale(D* x, int64_t n, float scale) override { Kernel({x}), cpu_.Scale(x, n, scale); }
  void FromFloat(D* to, const float* from, int64_t n) override { Kernel({to, from}), cpu_.FromFloat(to, from, n); }
  void AdamW(float* p, const D* g, float* m, float* v, int64_t n, const std::vector<optim::ElementRun>& decayed,
             const optim::ElementScalars& s, D* publish) override {
    Kernel({p, g, m, v, publish}), cpu_.AdamW(p, g, m, v, n, decayed, s, publish);
  }

 private:
  // Counts a pointer (and `bytes` after it) that is not inside a live allocation.
  void Check(const void* p, size_t bytes = 1) {
    if (!p) return;
    auto* c = static_cast<const char*>(p);
    auto it = live_.upper_bound(const_cast<char*>(c));
    bool inside = it != live_.begin() && (--it, c >= it->first && c + bytes <= it->first + it->second);
    strays_ += !inside;
  }
  void Kernel(std::initializer_list<const void*> pointers) {
    ++calls_;
    for (const void* p : pointers) Check(p);
  }

  Kernels<double>& cpu_ = Backend<double>();
  std::map<char*, size_t> live_;
  int strays_ = 0, calls_ = 0;
};

auto Download(Kernels<double>& k, Buffer<double>& b) -> std::vector<double> {
  std::vector<double> host(b.size());
  k.CopyToHost(host.data(), b.data(), b.size() * sizeof(double));
  return host;
}

void ExpectSameTraining(Arch arch) {
  ModelConfig c{arch, 2, 8, 2, arch == Arch::Llama ? 1 : 2, 12, 11, 5, arch == Arch::Gpt2, 10000.0};
  std::vector<uint32_t> tokens{1, 4, 2, 9, 0, 3, 3, 10, 5, 7}, targets{4, 2, 9, 0, 3, 3, 10, 5, 7, 1};
  CheckedBackend checked;
  {
    model::Transformer<double> on_cpu(c), elsewhere(c, {}, checked);
    on_cpu.Initialize(3), elsewhere.Initialize(3);
    // Twice, so reused activations and accumulated gradients are covered too.
    for (int pass = 0; pass < 2; ++pass) {
      EXPECT_EQ(on_cpu.Forward(tokens.data(), targets.data(), 2, 5),
                elsewhere.Forward(tokens.data(), targets.data(), 2, 5));
      on_cpu.Backward(), elsewhere.Backward();
    }
    std::vector<double> want(on_cpu.gradients().begin(), on_cpu.gradients().end());
    EXPECT_EQ(want, Download(checked, elsewhere.gradients()));
    EXPECT_EQ(checked.strays(), 0) << "the model handed a kernel memory the backend does not own";
    EXPECT_GT(checked.kernel_calls(), 20);
  }
}

TEST(Backend, Gpt2RunsOnlyThroughTheBackend) { ExpectSameTraining(Arch::Gpt2); }
TEST(Backend, LlamaRunsOnlyThroughTheBackend) { ExpectSameTraining(Arch::Llama); }

TEST(Backend, BuffersAreZeroedAndMoveOnly) {
  Buffer<float> a(Backend<float>(), 5);
  for (float x : a) EXPECT_EQ(x, 0.0f);
  a[2] = 7;
  Buffer<float> b = std::move(a);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b[2], 7.0f);
  b.Zero();
  EXPECT_EQ(b[2], 0.0f);
  EXPECT_EQ(KindName(Backend<float>().kind()), "cpu");
}

}  // namespace
}  // namespace avf::backend
