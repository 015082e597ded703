// The one BLAS entry point of the CPU kernels, shared by the dense and the
// attention kernels so that every GEMM is timed and counted in one place
// (bench/train_cpu reports the share of a step they take).
#pragma once

#include <cstdint>

namespace avf::cpu::detail {

// C(m x n) = alpha op(A) op(B) + beta C, row-major; op(X) is X or X^T.
// Leading dimensions are in elements, so a head's rows inside a (T, heads,
// head_dim) activation are addressed with ld = heads x head_dim.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace avf::cpu::detail
