// The GEMMs of the CPU kernels (gemm.h), timed and counted.
#include "cpu/gemm.h"

#include <cblas.h>

#include <atomic>
#include <chrono>
#include <type_traits>
#include <vector>

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

}  // namespace

namespace detail {

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  GemmTimer timer(m, n, k);
  auto gemm = [](auto... args) {
    if constexpr (std::is_same_v<T, float>) cblas_sgemm(args...);
    else cblas_dgemm(args...);
  };
  gemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
       static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
       static_cast<int>(ldc));
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);

// Until a bf16 GEMM library is wired in: widen the operands, sgemm, round once.
namespace {

auto Widened(bool trans, int64_t rows, int64_t cols, const Bf16* x, int64_t ld) -> std::vector<float> {
  int64_t r = trans ? cols : rows, c = trans ? rows : cols;
  std::vector<float> out(static_cast<size_t>(r * c));
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(i * c + j)] = numeric::ToFloat(x[i * ld + j]);
  }
  return out;
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Bf16* a, int64_t lda,
          const Bf16* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  std::vector<float> wa = Widened(trans_a, m, k, a, lda), wb = Widened(trans_b, k, n, b, ldb);
  Gemm<float>(trans_a, trans_b, m, n, k, alpha, wa.data(), trans_a ? m : k, wb.data(), trans_b ? k : n, beta, c, ldc);
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Bf16* a, int64_t lda,
          const Bf16* b, int64_t ldb, float beta, Bf16* c, int64_t ldc) {
  std::vector<float> wc(static_cast<size_t>(m * n));
  for (int64_t i = 0; beta != 0 && i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) wc[static_cast<size_t>(i * n + j)] = numeric::ToFloat(c[i * ldc + j]);
  }
  Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, wc.data(), n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = numeric::ToBf16(wc[static_cast<size_t>(i * n + j)]);
  }
}

}  // namespace detail

auto GemmSeconds() -> double { return static_cast<double>(gemm_ns.load()) * 1e-9; }
auto GemmFlops() -> double { return gemm_flops.load(); }
void ResetGemmCounters() {
  gemm_ns = 0;
  gemm_flops = 0;
}

}  // namespace avf::cpu
