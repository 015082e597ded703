// A CPU backend whose memory the host cannot touch, standing in for a GPU's:
// every allocation comes from one arena per process, inaccessible
// (PROT_NONE) except while one of an OpaqueBackend's own calls runs, so any host read or write of a
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
#include "comm/communicator.h"
#include "cpu/cpu_backend.h"
#include "parallel/staged_communicator.h"

namespace avf::testing {

// One arena per process, shared by every OpaqueBackend of any element type
// (a communicator's copies may go through another instance than the one
// that allocated).
inline constexpr size_t kArena = size_t{4} << 30;
struct Arena {
  uint8_t* base = nullptr;
  size_t used = 0;
  std::mutex mutex;
};
inline auto TheArena() -> Arena& {
  static Arena* arena = [] {
    auto* a = new Arena;
    void* p = mmap(nullptr, kArena, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) std::perror("OpaqueBackend: mmap"), std::abort();
    a->base = static_cast<uint8_t*>(p);
    return a;
  }();
  return *arena;
}

template <typename T>
class OpaqueBackend final : public backend::Kernels<T> {
 public:
  using AttentionShape = backend::AttentionShape;
  using W = backend::Wide<T>;
  using Runs = std::vector<optim::ElementRun>;

  ~OpaqueBackend() override = default;
  auto kind() const -> backend::Kind override { return backend::Kind::kCuda; }
  auto host_visible() const -> bool override { return false; }
  // From the process's arena, never reused (fresh pages read as zeros).
  auto Allocate(size_t bytes) -> void* override {
    Arena& a = TheArena();
    std::lock_guard lock(a.mutex);
    ++allocations_;
    size_t at = a.used;
    a.used += (bytes + 63) / 64 * 64;
    if (a.used > kArena) std::fprintf(stderr, "OpaqueBackend: arena full\n"), std::abort();
    return a.base + at;
  }
  void Free(void*) override {}
  // How many buffers this backend allocated.
  auto allocations() -> int64_t {
    std::lock_guard lock(TheArena().mutex);
    return allocations_;
  }
  // Whether [p, p + bytes) is inside the arena (every OpaqueBackend's memory).
  static auto Owns(const void* p, size_t bytes) -> bool {
    Arena& a = TheArena();
    auto* c = static_cast<const uint8_t*>(p);
    return c >= a.base && c + bytes <= a.base + kArena;
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
  // Runs `call` with the arena readable and writable.
  template <typename F>
  void Open(F&& call) {
    Arena& a = TheArena();
    std::lock_guard lock(a.mutex);
    Protect(a, PROT_READ | PROT_WRITE);
    call();
    Protect(a, PROT_NONE);
  }
  static void Protect(Arena& a, int protection) {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), end = (a.used + page - 1) / page * page;
    if (end > 0 && mprotect(a.base, end, protection) != 0) std::perror("OpaqueBackend: mprotect"), std::abort();
  }

  backend::Kernels<T>& cpu_ = cpu::Backend<T>();
  int64_t allocations_ = 0;
};

// A communicator that takes device memory, as NCCL does, standing in for it
// over a host communicator: every buffer must be OpaqueBackend memory (a
// host pointer is an error, as NCCL refuses one), and the data moves through
// host staging. Lets the engine's device-memory paths run without a GPU.
class OpaqueDeviceCommunicator final : public comm::Communicator {
 public:
  explicit OpaqueDeviceCommunicator(comm::Communicator& inner) : inner_(&inner), staged_(inner, memory_) {}
  explicit OpaqueDeviceCommunicator(std::unique_ptr<comm::Communicator> inner)
      : inner_(inner.get()), staged_(std::move(inner), memory_) {}

  auto rank() const -> int override { return staged_.rank(); }
  auto size() const -> int override { return staged_.size(); }
  auto device_memory() const -> bool override { return true; }
  auto AllReduce(void* d, size_t n, comm::DataType t, comm::ReduceOp op) -> llvm::Error override {
    if (auto e = Check(d, n, t)) return e;
    return staged_.AllReduce(d, n, t, op);
  }
  auto ReduceScatter(const void* in, void* out, size_t n, comm::DataType t, comm::ReduceOp op) -> llvm::Error override {
    if (auto e = Check(in, n * static_cast<size_t>(size()), t)) return e;
    if (auto e = Check(out, n, t)) return e;
    return staged_.ReduceScatter(in, out, n, t, op);
  }
  auto AllGather(const void* in, void* out, size_t n, comm::DataType t) -> llvm::Error override {
    if (auto e = Check(in, n, t)) return e;
    if (auto e = Check(out, n * static_cast<size_t>(size()), t)) return e;
    return staged_.AllGather(in, out, n, t);
  }
  auto Broadcast(void* d, size_t n, comm::DataType t, int root) -> llvm::Error override {
    if (auto e = Check(d, n, t)) return e;
    return staged_.Broadcast(d, n, t, root);
  }
  auto Send(const void* d, size_t n, comm::DataType t, int peer) -> llvm::Error override {
    if (auto e = Check(d, n, t)) return e;
    return staged_.Send(d, n, t, peer);
  }
  auto Recv(void* d, size_t n, comm::DataType t, int peer) -> llvm::Error override {
    if (auto e = Check(d, n, t)) return e;
    return staged_.Recv(d, n, t, peer);
  }
  auto SendRecv(const void* s, size_t sn, int to, void* r, size_t rn, int from, comm::DataType t)
      -> llvm::Error override {
    if (auto e = Check(s, sn, t)) return e;
    if (auto e = Check(r, rn, t)) return e;
    return staged_.SendRecv(s, sn, to, r, rn, from, t);
  }
  auto Barrier() -> llvm::Error override { return staged_.Barrier(); }
  auto Split(int color, int key) -> llvm::Expected<std::unique_ptr<comm::Communicator>> override {
    auto child = inner_->Split(color, key);
    if (!child) return child.takeError();
    if (!*child) return nullptr;
    return std::make_unique<OpaqueDeviceCommunicator>(std::move(*child));
  }

 private:
  static auto Check(const void* p, size_t n, comm::DataType t) -> llvm::Error {
    if (n == 0 || OpaqueBackend<float>::Owns(p, n * comm::ElementBytes(t))) return llvm::Error::success();
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "a host pointer passed for device memory");
  }

  OpaqueBackend<float> memory_;
  comm::Communicator* inner_;
  parallel::StagedCommunicator staged_;
};

}  // namespace avf::testing
