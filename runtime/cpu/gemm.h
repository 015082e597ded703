// The one GEMM entry point of the CPU kernels, shared by the dense and the
// attention kernels so that every GEMM is timed and counted in one place
// (bench/train_cpu reports the share of a step they take).
//
// fp32 and bf16 run on oneDNN, which picks its kernels from the CPU's feature
// flags (AVX2, AVX-512, AVX-512-BF16, AMX); fp64, used only by the
// finite-difference checks, runs on OpenBLAS. A GEMM of more than a few
// MFLOP uses all of OpenMP's threads; a smaller one, or one called inside an
// OpenMP parallel region (per attention head, say), runs on its calling
// thread alone.
#pragma once

#include <cstdint>
#include <string>

#include "backend/element.h"

namespace avf::cpu {

// Which library and instruction set run the fp32 and bf16 GEMMs, for logs and
// benchmarks: "oneDNN 2.6.3 (OpenMP), avx512_core_bf16: fp32 sgemm, bf16 matmul".
auto GemmPath() -> std::string;

}  // namespace avf::cpu

namespace avf::cpu::detail {

// C(m x n) = alpha op(A) op(B) + beta C, row-major; op(X) is X or X^T.
// Leading dimensions are in elements, so a head's rows inside a (T, heads,
// head_dim) activation are addressed with ld = heads x head_dim. With beta 0,
// C is only written.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc);

// The same on bf16 operands, every product accumulated in fp32: into an fp32
// C, or into a bf16 C rounded once at the end (the beta term, read from C
// widened exactly, is added in fp32 before that rounding to nearest even).
using backend::Bf16;
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Bf16* a, int64_t lda,
          const Bf16* b, int64_t ldb, float beta, float* c, int64_t ldc);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Bf16* a, int64_t lda,
          const Bf16* b, int64_t ldb, float beta, Bf16* c, int64_t ldc);

}  // namespace avf::cpu::detail
