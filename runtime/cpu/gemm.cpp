// The GEMMs of the CPU kernels (gemm.h), timed and counted.
//
// fp32 runs oneDNN's sgemm: no primitive to create; on GPT-2 124M's layer
// GEMMs within a few percent of OpenBLAS with its best core (behind by 15-20%
// on the two forward ones with a long k or n, where the matmul primitive is
// not, but that one is 20-35% behind on dX += dY W), and 1.5 to 2 times as
// fast on the attention's per-head blocks (bench/gemm_cpu). bf16 runs the
// matmul primitive, whose strided memory descriptors take the heads' leading
// dimensions and whose sum post-op adds beta C in fp32 before the one
// rounding of a bf16 C. Without bf16 dot products (AVX-512-BF16 or AMX),
// oneDNN 2.6 emulates bf16 at a third of its fp32 rate on AVX-512 and has no
// bf16 matmul at all on AVX2: there the operands are widened to fp32 instead.
#include "cpu/gemm.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "cpu/kernels.h"

namespace avf::cpu {

namespace {

// Nanoseconds and FLOPs of all GEMMs (relaxed: only totals are read).
std::atomic<int64_t> gemm_ns{0};
std::atomic<double> gemm_flops{0};

// Adds the scope's duration and a GEMM's 2mnk FLOPs to the counters.
class GemmTimer {
 public:
  GemmTimer(int64_t m, int64_t n, int64_t k) : start_(std::chrono::steady_clock::now()), flops_(2.0 * m * n * k) {}
  ~GemmTimer() {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
    gemm_ns.fetch_add(ns, std::memory_order_relaxed);
    gemm_flops.fetch_add(flops_, std::memory_order_relaxed);
  }

 private:
  std::chrono::steady_clock::time_point start_;
  double flops_;
};

// The kernels pass shapes and leading dimensions they derived themselves, so
// oneDNN refusing them is a bug in the caller, reported like a failed assert.
void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "avf: internal error: %s\n", what);
  std::abort();
}

// oneDNN's instruction sets as its verbose mode names them.
auto IsaName(dnnl_cpu_isa_t isa) -> std::string {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return fmt::format("isa {:#x}", static_cast<unsigned>(isa));
  }
}

auto ThreadingName(unsigned runtime) -> const char* {
  switch (runtime) {
    case DNNL_RUNTIME_OMP: return "OpenMP";
    case DNNL_RUNTIME_TBB: return "TBB";
    case DNNL_RUNTIME_SEQ: return "sequential";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
    default: return "unknown threading";
  }
}

// The instruction sets oneDNN dispatches to are supersets as bit masks, so
// AMX includes AVX-512-BF16. oneDNN fixes the set on first use, after which
// ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA no longer change it.
auto HasBf16DotProducts() -> bool {
  static const bool has =
      (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
  return has;
}

}  // namespace

auto GemmPath() -> std::string {
  const dnnl_version_t* v = dnnl_version();
  std::string bf16 = HasBf16DotProducts() ? "bf16 matmul" : "bf16 widened to fp32 sgemm (no bf16 dot products)";
  return fmt::format("oneDNN {}.{}.{} ({}), {}: fp32 sgemm, {}", v->major, v->minor, v->patch,
                     ThreadingName(v->cpu_runtime), IsaName(dnnl_get_effective_cpu_isa()), bf16);
}

namespace detail {

namespace {

// One GEMM's shape and scalars, in gemm.h's row-major terms.
struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  float alpha = 1, beta = 0;

  auto flops() const -> double { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * k; }
};

// Below about 4 MFLOP a GEMM is faster on its calling thread than split
// over a parallel region (32^3 in bf16: 0.6 us on one thread, 5 us on two),
// and it keeps forked ranks that share cores from waiting on each other's
// spinning threads. oneDNN takes its thread count from OpenMP's, for new
// regions of the calling thread, both when it creates a primitive and when
// it runs one; this scope sets it to 1 for small GEMMs.
constexpr double kOneThreadFlops = 1 << 22;

class OneThreadForSmall {
 public:
  explicit OneThreadForSmall(const GemmShape& s) : previous_(s.flops() < kOneThreadFlops ? omp_get_max_threads() : 0) {
    if (previous_ > 1) omp_set_num_threads(1);
  }
  ~OneThreadForSmall() {
    if (previous_ > 1) omp_set_num_threads(previous_);
  }
  OneThreadForSmall(const OneThreadForSmall&) = delete;
  auto operator=(const OneThreadForSmall&) -> OneThreadForSmall& = delete;

 private:
  int previous_;
};

// C = beta C for a GEMM with nothing to add up (k = 0), which oneDNN rejects;
// beta 0 writes zeros without reading C, as BLAS does.
template <typename C>
void ScaleOnly(const GemmShape& s, C* c) {
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      C& x = c[i * s.ldc + j];
      x = s.beta == 0 ? backend::Narrow<C>(0) : backend::Narrow<C>(s.beta * backend::Widen(x));
    }
  }
}

void Sgemm(const GemmShape& s, const float* a, const float* b, float* c) {
  dnnl_status_t status = dnnl_sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, s.alpha, a, s.lda, b,
                                    s.ldb, s.beta, c, s.ldc);
  Require(status == dnnl_success, "oneDNN's sgemm refused its arguments");
}

// --- bf16 through oneDNN's matmul primitive --------------------------------

using dnnl::memory;

// op(X) as a rows x cols matrix: X^T is X's row-major storage read with its
// strides swapped.
auto Operand(int64_t rows, int64_t cols, bool trans, int64_t ld, memory::data_type type) -> memory::desc {
  return memory::desc({rows, cols}, type, trans ? memory::dims{1, ld} : memory::dims{ld, 1});
}

auto Engine() -> const dnnl::engine& {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A primitive with the memory descriptors it was made for.
struct Matmul {
  dnnl::matmul primitive;
  memory::desc a, b, c, scratch;
};

// alpha is the output scale and beta the sum post-op's scale: C = beta C +
// alpha (A B), all in fp32, then rounded once into a bf16 C.
auto MakeMatmul(const GemmShape& s, memory::data_type c_type) -> Matmul {
  Matmul mm{{},
            Operand(s.m, s.k, s.trans_a, s.lda, memory::data_type::bf16),
            Operand(s.k, s.n, s.trans_b, s.ldb, memory::data_type::bf16),
            Operand(s.m, s.n, false, s.ldc, c_type),
            {}};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.alpha != 1) attr.set_output_scales(0, {s.alpha});
  if (s.beta != 0) {
    dnnl::post_ops ops;
    ops.append_sum(s.beta);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(mm.a, mm.b, mm.c), attr, Engine());
  mm.scratch = pd.scratchpad_desc();
  mm.primitive = dnnl::matmul(pd);
  return mm;
}

// A primitive is made for OpenMP's thread count at its creation (oneDNN
// splits its work by it), so the count is part of the key.
struct MatmulKey {
  GemmShape shape;
  memory::data_type c_type;
  int threads;

  auto operator==(const MatmulKey& o) const -> bool {
    const GemmShape &x = shape, &y = o.shape;
    return x.trans_a == y.trans_a && x.trans_b == y.trans_b && x.m == y.m && x.n == y.n && x.k == y.k &&
           x.lda == y.lda && x.ldb == y.ldb && x.ldc == y.ldc && x.alpha == y.alpha && x.beta == y.beta &&
           c_type == o.c_type && threads == o.threads;
  }
};

struct MatmulKeyHash {
  auto operator()(const MatmulKey& key) const -> size_t {
    const GemmShape& s = key.shape;
    size_t h = (static_cast<size_t>(key.c_type) * 1024 + key.threads) * 4 + s.trans_a * 2 + s.trans_b;
    for (int64_t x : {s.m, s.n, s.k, s.lda, s.ldb, s.ldc}) h = h * 1000003 + std::hash<int64_t>{}(x);
    for (float x : {s.alpha, s.beta}) h = h * 1000003 + std::hash<float>{}(x);
    return h;
  }
};

// Primitives by shape, so that the per-head calls of the attention find theirs
// instead of creating it again (oneDNN's own cache would still redo the
// primitive descriptor: 10 to 15% of a 256 x 256 x 64 GEMM). A training step
// has a few dozen shapes; a cache past kMaxEntries starts over.
class MatmulCache {
 public:
  auto Get(const GemmShape& s, memory::data_type c_type) -> Matmul {
    std::lock_guard<std::mutex> lock(mutex_);
    MatmulKey key{s, c_type, omp_get_max_threads()};
    auto it = primitives_.find(key);
    if (it != primitives_.end()) return it->second;
    if (primitives_.size() >= kMaxEntries) primitives_.clear();
    return primitives_.emplace(key, MakeMatmul(s, c_type)).first->second;
  }

 private:
  static constexpr size_t kMaxEntries = 512;
  std::mutex mutex_;
  std::unordered_map<MatmulKey, Matmul, MatmulKeyHash> primitives_;
};

// Primitives run on whichever thread calls, several at once, so each thread
// passes its own stream and scratch memory (the user scratchpad mode). In
// oneDNN's default mode a primitive may only run on the thread that created
// it, and its scratch memory is allocated and freed around every call: half
// a MiB of page faults per 256 x 256 attention head on a worker thread.
void MatmulBf16(const GemmShape& s, const Bf16* a, const Bf16* b, void* c, memory::data_type c_type) {
  static MatmulCache cache;
  thread_local dnnl::stream stream(Engine());
  Matmul mm = cache.Get(s, c_type);
  memory ma(mm.a, Engine(), const_cast<Bf16*>(a)), mb(mm.b, Engine(), const_cast<Bf16*>(b)), mc(mm.c, Engine(), c);
  thread_local std::vector<char> scratch;
  if (scratch.size() < mm.scratch.get_size()) scratch.resize(mm.scratch.get_size());
  memory ms(mm.scratch, Engine(), scratch.data());
  mm.primitive.execute(stream,
                       {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, ms}});
  stream.wait();
}

// --- bf16 without bf16 dot products: widened to fp32 ------------------------

// X (rows x cols, leading dimension ld) as a packed fp32 matrix.
auto Widened(int64_t rows, int64_t cols, const Bf16* x, int64_t ld) -> std::vector<float> {
  std::vector<float> out(static_cast<size_t>(rows * cols));
#pragma omp parallel for if (rows * cols >= (1 << 16))
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) out[static_cast<size_t>(i * cols + j)] = backend::Widen(x[i * ld + j]);
  }
  return out;
}

// A's and B's storage widened (op() still applies: a transposed operand stays
// transposed), then one sgemm into the fp32 C.
void WidenedSgemm(const GemmShape& s, const Bf16* a, const Bf16* b, float* c) {
  int64_t a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
  int64_t b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
  std::vector<float> wa = Widened(a_rows, a_cols, a, s.lda), wb = Widened(b_rows, b_cols, b, s.ldb);
  GemmShape packed = s;
  packed.lda = a_cols, packed.ldb = b_cols;
  Sgemm(packed, wa.data(), wb.data(), c);
}

// Into a bf16 C: C widened (when beta reads it), the fp32 GEMM, one rounding.
void WidenedSgemm(const GemmShape& s, const Bf16* a, const Bf16* b, Bf16* c) {
  std::vector<float> wc =
      s.beta != 0 ? Widened(s.m, s.n, c, s.ldc) : std::vector<float>(static_cast<size_t>(s.m * s.n));
  GemmShape packed = s;
  packed.ldc = s.n;
  WidenedSgemm(packed, a, b, wc.data());
#pragma omp parallel for if (s.m * s.n >= (1 << 16))
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) c[i * s.ldc + j] = backend::Narrow<Bf16>(wc[static_cast<size_t>(i * s.n + j)]);
  }
}

template <typename C>
void GemmBf16(const GemmShape& s, const Bf16* a, const Bf16* b, C* c) {
  GemmTimer timer(s.m, s.n, s.k);
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0) return ScaleOnly(s, c);
  OneThreadForSmall threads(s);
  if (!HasBf16DotProducts()) return WidenedSgemm(s, a, b, c);
  MatmulBf16(s, a, b, c, std::is_same_v<C, Bf16> ? memory::data_type::bf16 : memory::data_type::f32);
}

}  // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  GemmTimer timer(m, n, k);
  if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
                static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  } else {
    GemmShape s{trans_a, trans_b, m, n, k, lda, ldb, ldc, alpha, beta};
    if (m == 0 || n == 0) return;
    if (k == 0) return ScaleOnly(s, c);
    OneThreadForSmall threads(s);
    Sgemm(s, a, b, c);
  }
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Bf16* a, int64_t lda,
          const Bf16* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  GemmBf16(GemmShape{trans_a, trans_b, m, n, k, lda, ldb, ldc, alpha, beta}, a, b, c);
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Bf16* a, int64_t lda,
          const Bf16* b, int64_t ldb, float beta, Bf16* c, int64_t ldc) {
  GemmBf16(GemmShape{trans_a, trans_b, m, n, k, lda, ldb, ldc, alpha, beta}, a, b, c);
}

}  // namespace detail

auto GemmSeconds() -> double { return static_cast<double>(gemm_ns.load()) * 1e-9; }
auto GemmFlops() -> double { return gemm_flops.load(); }
void ResetGemmCounters() {
  gemm_ns = 0;
  gemm_flops = 0;
}

}  // namespace avf::cpu
