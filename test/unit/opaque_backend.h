// A CPU backend whose memory the host cannot touch, standing in for a GPU's:
// every allocation comes from one arena, inaccessible (PROT_NONE) except
// while one of this backend's own calls runs, so any host read or write of a
// buffer elsewhere (the engine, the optimizer, a communicator) is a
// segmentation fault. The kernels are the CPU backend's, so a run on it
// must give the CPU backend's bits. Calls are serialized (a pipeline sender
// thread copies while the main thread computes).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"

namespace avf::testing {

template <typename T>
class OpaqueBackend final : public backend::Kernels<T> {
 public:
  using AttentionShape = backend::AttentionShape;
  using W = backend::Wide<T>;
  using Runs = std::vector<optim::ElementRun>;

  OpaqueBackend() {
    arena_ =
        static_cast<uint8_t*>(mmap(nullptr, kArena, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (arena_ == MAP_FAILED) std::perror("OpaqueBackend: mmap"), std::abort();
  }
  ~OpaqueBackend() override { munmap(arena_, kArena); }
  auto kind() const -> backend::Kind override { return backend::Kind::kCuda; }
  auto host_visible() const -> bool override { return false; }
  // From one arena, never reused (fresh pages read as zeros).
  auto Allocate(size_t bytes) -> void* override {
    std::lock_guard lock(mutex_);
    ++allocations_;
    size_t at = used_;
    used_ += (bytes + 63) / 64 * 64;
    if (used_ > kArena) std::fprintf(stderr, "OpaqueBackend: arena full\n"), std::abort();
    return arena_ + at;
  }
  void Free(void*) override {}
  auto allocations() -> int64_t {
    std::lock_guard lock(mutex_);
    return allocations_;
  }
  void CopyFromHost(void* d, const void* h, size_t n) override {
    Open([&] { cpu_.CopyFromHost(d, h, n); });
  }
  void CopyToHost(void* h, const void* s, size_t n) override {
    Open([&] { cpu_.CopyToHost(h, s, n); });
  }
  void Zero(void* d, size_t n) override {
    Open([&] { cpu_.Zero(d, n); });
  }
  void Copy2D(void* d, size_t dp, const void* s, size_t sp, size_t row, size_t rows) override {
    Open([&] { cpu_.Copy2D(d, dp, s, sp, row, rows); });
  }
  void Synchronize() override {}

  void MatmulForward(T* o, const T* i, const T* w, const T* b, int64_t n, int64_t c, int64_t oc) override {
    Open([&] { cpu_.MatmulForward(o, i, w, b, n, c, oc); });
  }
  void MatmulBackward(T* di, T* dw, T* db, const T* dy, const T* i, const T* w, int64_t n, int64_t c,
                      int64_t oc) override {
    Open([&] { cpu_.MatmulBackward(di, dw, db, dy, i, w, n, c, oc); });
  }
  void EmbeddingForward(T* o, const uint32_t* t, const T* wte, const T* wpe, int64_t b, int64_t s, int64_t c,
                        int64_t vf, int64_t vc) override {
    Open([&] { cpu_.EmbeddingForward(o, t, wte, wpe, b, s, c, vf, vc); });
  }
  void EmbeddingBackward(T* dwte, T* dwpe, const T* dy, const uint32_t* t, int64_t b, int64_t s, int64_t c, int64_t vf,
                         int64_t vc) override {
    Open([&] { cpu_.EmbeddingBackward(dwte, dwpe, dy, t, b, s, c, vf, vc); });
  }
  void LayerNormForward(T* o, W* m, W* r, const T* i, const T* w, const T* b, int64_t n, int64_t c) override {
    Open([&] { cpu_.LayerNormForward(o, m, r, i, w, b, n, c); });
  }
  void LayerNormBackward(T* di, T* dw, T* db, const T* dy, const T* i, const T* w, const W* m, const W* r, int64_t n,
                         int64_t c) override {
    Open([&] { cpu_.LayerNormBackward(di, dw, db, dy, i, w, m, r, n, c); });
  }
  void RmsNormForward(T* o, W* r, const T* i, const T* w, int64_t n, int64_t c) override {
    Open([&] { cpu_.RmsNormForward(o, r, i, w, n, c); });
  }
  void RmsNormBackward(T* di, T* dw, const T* dy, const T* i, const T* w, const W* r, int64_t n, int64_t c) override {
    Open([&] { cpu_.RmsNormBackward(di, dw, dy, i, w, r, n, c); });
  }
  void GeluForward(T* o, const T* i, int64_t n) override {
    Open([&] { cpu_.GeluForward(o, i, n); });
  }
  void GeluBackward(T* di, const T* i, const T* dy, int64_t n) override {
    Open([&] { cpu_.GeluBackward(di, i, dy, n); });
  }
  void SwigluForward(T* o, const T* g, const T* u, int64_t n) override {
    Open([&] { cpu_.SwigluForward(o, g, u, n); });
  }
  void SwigluBackward(T* dg, T* du, const T* dy, const T* g, const T* u, int64_t n) override {
    Open([&] { cpu_.SwigluBackward(dg, du, dy, g, u, n); });
  }
  void ResidualForward(T* o, const T* a, const T* b, int64_t n) override {
    Open([&] { cpu_.ResidualForward(o, a, b, n); });
  }
  void ResidualBackward(T* da, T* db, const T* dy, int64_t n) override {
    Open([&] { cpu_.ResidualBackward(da, db, dy, n); });
  }
  void RopeForward(T* x, int64_t b, int64_t t, int64_t h, int64_t hd, double theta) override {
    Open([&] { cpu_.RopeForward(x, b, t, h, hd, theta); });
  }
  void RopeBackward(T* dx, int64_t b, int64_t t, int64_t h, int64_t hd, double theta) override {
    Open([&] { cpu_.RopeBackward(dx, b, t, h, hd, theta); });
  }
  auto AttentionStateBytes(const AttentionShape& s) const -> size_t override { return cpu_.AttentionStateBytes(s); }
  void AttentionForward(T* o, void* st, const T* q, const T* k, const T* v, const AttentionShape& s) override {
    Open([&] { cpu_.AttentionForward(o, st, q, k, v, s); });
  }
  void AttentionBackward(T* dq, T* dk, T* dv, const T* dy, const T* o, const void* st, const T* q, const T* k,
                         const T* v, const AttentionShape& s) override {
    Open([&] { cpu_.AttentionBackward(dq, dk, dv, dy, o, st, q, k, v, s); });
  }
  void CrossEntropyStats(W* m, W* tl, const T* z, const uint32_t* t, int64_t n, int64_t v, int64_t vf) override {
    Open([&] { cpu_.CrossEntropyStats(m, tl, z, t, n, v, vf); });
  }
  void CrossEntropySoftmax(T* p, W* sum, const T* z, const W* m, int64_t n, int64_t v) override {
    Open([&] { cpu_.CrossEntropySoftmax(p, sum, z, m, n, v); });
  }
  void CrossEntropyFinish(W* l, T* p, const W* sum, const W* m, const W* tl, int64_t n, int64_t v) override {
    Open([&] { cpu_.CrossEntropyFinish(l, p, sum, m, tl, n, v); });
  }
  void CrossEntropyBackward(T* dz, const T* p, const uint32_t* t, const W* dl, int64_t n, int64_t v,
                            int64_t vf) override {
    Open([&] { cpu_.CrossEntropyBackward(dz, p, t, dl, n, v, vf); });
  }
  void MaxOverBlocks(W* o, const W* b, int64_t count, int64_t nb) override {
    Open([&] { cpu_.MaxOverBlocks(o, b, count, nb); });
  }
  auto SquaredNorm(const T* x, const Runs& runs) -> double override {
    double sum = 0;
    Open([&] { sum = cpu_.SquaredNorm(x, runs); });
    return sum;
  }
  void Scale(T* x, int64_t n, float scale) override {
    Open([&] { cpu_.Scale(x, n, scale); });
  }
  void FromFloat(T* to, const float* from, int64_t n) override {
    Open([&] { cpu_.FromFloat(to, from, n); });
  }
  void AdamW(float* p, const T* g, float* m, float* v, int64_t n, const Runs& decayed, const optim::ElementScalars& s,
             T* publish) override {
    Open([&] { cpu_.AdamW(p, g, m, v, n, decayed, s, publish); });
  }

 private:
  // Runs `call` with every allocation readable and writable.
  template <typename F>
  void Open(F&& call) {
    std::lock_guard lock(mutex_);
    Protect(PROT_READ | PROT_WRITE);
    call();
    Protect(PROT_NONE);
  }
  void Protect(int protection) {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), end = (used_ + page - 1) / page * page;
    if (end > 0 && mprotect(arena_, end, protection) != 0) std::perror("OpaqueBackend: mprotect"), std::abort();
  }

  static constexpr size_t kArena = size_t{4} << 30;
  backend::Kernels<T>& cpu_ = cpu::Backend<T>();
  uint8_t* arena_ = nullptr;
  size_t used_ = 0;
  int64_t allocations_ = 0;
  std::mutex mutex_;
};

}  // namespace avf::testing
