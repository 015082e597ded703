// Matrix products on the GPU through cuBLASLt: fp32 in fp32, bf16 in bf16
// with fp32 accumulation, an optional bias epilogue. Adding into a bf16
// gradient (beta = 1) should round once; on an H200 it rounded twice (the
// kernel contract's bf16 Matmul fails there: docs/development.md). Each distinct shape
// (with its pointers' alignment) is planned once: its layouts and the
// heuristic's algorithm are kept, and every product shares one workspace
// allocated up front, so a training step allocates nothing. Internal to
// kernels/ (the CUDA backend's matmuls).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace avf::kernels {

// One column-major product d(m x n) = op(a) op(b) + beta d (+ bias(m) on
// every column), op(a) m x k, op(b) k x n; a row-major (r x c) matrix is a
// column-major (c x r) one with the same leading dimension.
struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
};

class CublasLtGemm {
 public:
  // `type`: CUDA_R_32F or CUDA_R_16BF. The workspace is allocated here;
  // problem() says why when the handle or it could not be made.
  CublasLtGemm(cudaStream_t stream, cudaDataType_t type);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  auto operator=(const CublasLtGemm&) -> CublasLtGemm& = delete;

  auto problem() const -> const std::string& { return problem_; }
  // "" on success, else what failed (cuBLASLt's status or CUDA's error).
  auto Run(const GemmShape& s, const void* a, const void* b, void* d, float beta, const void* bias) -> std::string;

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  // The shape, whether there is a bias, and the four pointers' alignments.
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int, int, int, int>;
  auto PlanFor(const Key& key, const GemmShape& s, std::string& error) -> const Plan*;

  cudaStream_t stream_;
  cudaDataType_t type_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::string problem_;
  std::map<Key, Plan> plans_;
};

}  // namespace avf::kernels
