#include "kernels/cublaslt_gemm.h"

#include <fmt/format.h>

#include <cstdint>

namespace avf::kernels {

namespace {

// What cuBLASLt's fastest GEMMs ask for on sm_80 and sm_90.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// The largest power of two (up to 256) that divides the address.
auto Alignment(const void* p) -> int {
  auto address = reinterpret_cast<uintptr_t>(p);
  int align = 256;
  while (align > 1 && address % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

auto Failed(cublasStatus_t status, const char* what) -> std::string {
  return status == CUBLAS_STATUS_SUCCESS ? std::string() : fmt::format("{}: {}", what, cublasLtGetStatusString(status));
}

template <typename V>
auto SetOp(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute, const V& value) -> cublasStatus_t {
  return cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof(value));
}

template <typename V>
auto SetPreference(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attribute, const V& value)
    -> cublasStatus_t {
  return cublasLtMatmulPreferenceSetAttribute(p, attribute, &value, sizeof(value));
}

}  // namespace

CublasLtGemm::CublasLtGemm(cudaStream_t stream, cudaDataType_t type) : stream_(stream), type_(type) {
  if (cublasStatus_t s = cublasLtCreate(&handle_); s != CUBLAS_STATUS_SUCCESS) {
    problem_ = Failed(s, "cublasLtCreate"), handle_ = nullptr;
    return;
  }
  if (cudaError_t e = cudaMalloc(&workspace_, kWorkspaceBytes); e != cudaSuccess) {
    (void)cudaGetLastError();
    problem_ =
        fmt::format("cudaMalloc of the GEMM workspace ({} MiB): {}", kWorkspaceBytes >> 20, cudaGetErrorString(e));
    workspace_ = nullptr;
  }
}

CublasLtGemm::~CublasLtGemm() {
  for (auto& [key, plan] : plans_) {
    cublasLtMatrixLayoutDestroy(plan.a), cublasLtMatrixLayoutDestroy(plan.b), cublasLtMatrixLayoutDestroy(plan.d);
    cublasLtMatmulDescDestroy(plan.op);
  }
  if (workspace_) (void)cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

auto CublasLtGemm::PlanFor(const Key& key, const GemmShape& s, std::string& error) -> const Plan* {
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  Plan p;
  cublasOperation_t ta = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  auto [a_rows, a_cols] = s.trans_a ? std::pair(s.k, s.m) : std::pair(s.m, s.k);
  auto [b_rows, b_cols] = s.trans_b ? std::pair(s.n, s.k) : std::pair(s.k, s.n);
  bool bias = std::get<8>(key);
  cublasStatus_t st = cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (st == CUBLAS_STATUS_SUCCESS) st = SetOp(p.op, CUBLASLT_MATMUL_DESC_TRANSA, ta);
  if (st == CUBLAS_STATUS_SUCCESS) st = SetOp(p.op, CUBLASLT_MATMUL_DESC_TRANSB, tb);
  if (st == CUBLAS_STATUS_SUCCESS && bias) st = SetOp(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  if (st == CUBLAS_STATUS_SUCCESS && bias) {
    st = SetOp(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(type_));
  }
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p.a, type_, a_rows, a_cols, s.lda);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p.b, type_, b_rows, b_cols, s.ldb);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p.d, type_, s.m, s.n, s.ldd);
  cublasLtMatmulPreference_t pref = nullptr;
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceCreate(&pref);
  if (st == CUBLAS_STATUS_SUCCESS) st = SetPreference(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kWorkspaceBytes);
  const cublasLtMatmulPreferenceAttributes_t aligns[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t values[] = {static_cast<uint32_t>(std::get<9>(key)), static_cast<uint32_t>(std::get<10>(key)),
                             static_cast<uint32_t>(std::get<11>(key)), static_cast<uint32_t>(std::get<12>(key))};
  for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i) st = SetPreference(pref, aligns[i], values[i]);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.d, p.d, pref, 1, &result, &found);
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_SUCCESS && found == 0) st = CUBLAS_STATUS_NOT_SUPPORTED;
  if (st != CUBLAS_STATUS_SUCCESS) {
    error = Failed(st, "planning a cuBLASLt matmul") +
            fmt::format(" ({} x {} x {}, transposes {}{}, alignments {} {} {} bytes)", s.m, s.n, s.k,
                        s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', values[0], values[1], values[3]);
    cublasLtMatrixLayoutDestroy(p.a), cublasLtMatrixLayoutDestroy(p.b), cublasLtMatrixLayoutDestroy(p.d);
    cublasLtMatmulDescDestroy(p.op);
    return nullptr;
  }
  p.algo = result.algo;
  return &plans_.emplace(key, p).first->second;
}

auto CublasLtGemm::Run(const GemmShape& s, const void* a, const void* b, void* d, float beta, const void* bias)
    -> std::string {
  if (!problem_.empty()) return problem_;
  if (s.m == 0 || s.n == 0) return {};
  Key key{s.trans_a, s.trans_b,       s.m,          s.n,          s.k,          s.lda,       s.ldb,
          s.ldd,     bias != nullptr, Alignment(a), Alignment(b), Alignment(d), Alignment(d)};
  std::string error;
  const Plan* p = PlanFor(key, s, error);
  if (!p) return error;
  if (bias) {
    if (cublasStatus_t st = SetOp(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias); st != CUBLAS_STATUS_SUCCESS) {
      return Failed(st, "setting the bias of a cuBLASLt matmul");
    }
  }
  const float alpha = 1.0f;
  return Failed(cublasLtMatmul(handle_, p->op, &alpha, a, p->a, b, p->b, &beta, d, p->d, d, p->d, &p->algo, workspace_,
                               kWorkspaceBytes, stream_),
                "cublasLtMatmul");
}

}  // namespace avf::kernels
