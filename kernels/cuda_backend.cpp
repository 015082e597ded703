// The CUDA backend: device memory, one stream, kernels.h and cuBLASLt.
#include "kernels/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "kernels/cublaslt_gemm.h"
#include "kernels/kernels.h"

namespace avf::kernels {

namespace {

using backend::Kernels;
using backend::Kind;

constexpr double kGiB = 1 << 30;

[[noreturn]] void Fatal(int device, const std::string& what) {
  std::fprintf(stderr, "avf-run: error: GPU %d: %s\n", device, what.c_str());
  std::exit(1);
}

template <typename T>
class CudaKernels final : public Kernels<T> {
 public:
  using typename Kernels<T>::AttentionShape;

  explicit CudaKernels(int device) : device_(device) {
    Check(cudaSetDevice(device), "cudaSetDevice");
    Check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the compute stream");
    gemm_ = std::make_unique<CublasLtGemm>(stream_, std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF);
    if (!gemm_->problem().empty()) Fatal(device_, gemm_->problem());
    norm_out_ = Allocate(sizeof(double));
  }
  ~CudaKernels() override {
    (void)cudaStreamSynchronize(stream_);
    for (void* p : {static_cast<void*>(norm_runs_.device), static_cast<void*>(decay_runs_.device), norm_out_}) {
      if (p) (void)cudaFree(p);
    }
    gemm_.reset();
    if (scratch_) (void)cudaFree(scratch_);
    (void)cudaStreamDestroy(stream_);
  }

  auto kind() const -> Kind override { return Kind::kCuda; }
  auto host_visible() const -> bool override { return false; }
  auto Allocate(size_t bytes) -> void* override {
    OnDevice();
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) OutOfMemory(bytes, e);
    Zero(p, bytes);
    return p;
  }
  void Free(void* p) override { OnDevice(), Check(cudaFree(p), "cudaFree"); }
  // From pageable host memory the copy has taken the bytes when it returns,
  // so the caller may reuse its buffer at once.
  void CopyFromHost(void* dst, const void* host, size_t bytes) override {
    OnDevice();
    Check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_), "copying to the GPU");
  }
  void CopyToHost(void* host, const void* src, size_t bytes) override {
    OnDevice();
    Check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_), "copying from the GPU");
    Synchronize();
  }
  void Zero(void* dst, size_t bytes) override { Check(cudaMemsetAsync(dst, 0, bytes, stream_), "cudaMemsetAsync"); }
  void Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t row_bytes, size_t rows) override {
    if (rows == 0 || row_bytes == 0) return;
    OnDevice();
    Check(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpy2DAsync");
  }
  void Synchronize() override { OnDevice(), Check(cudaStreamSynchronize(stream_), "the GPU's queued work"); }

  // out(N x OC) = in(N x C) weight(OC x C)^T + bias: column-major, out^T(OC x N) = weight^T in^T.
  void MatmulForward(T* out, const T* in, const T* w, const T* bias, int64_t n, int64_t c, int64_t oc) override {
    Gemm({.trans_a = true, .m = oc, .n = n, .k = c, .lda = c, .ldb = c, .ldd = oc}, w, in, out, 0.0f, bias);
  }
  // din^T(C x N) += weight^T(C x OC) dout^T(OC x N); dweight^T(C x OC) += in^T(C x N) dout(N x OC).
  void MatmulBackward(T* din, T* dw, T* db, const T* dout, const T* in, const T* w, int64_t n, int64_t c,
                      int64_t oc) override {
    if (din) Gemm({.m = c, .n = n, .k = oc, .lda = c, .ldb = oc, .ldd = c}, w, dout, din, 1.0f, nullptr);
    Gemm({.trans_b = true, .m = c, .n = oc, .k = n, .lda = c, .ldb = oc, .ldd = c}, in, dout, dw, 1.0f, nullptr);
    if (db) Check(AddColumnSums(db, dout, n, oc, Scratch(ColumnSumsWorkspaceBytes(n, oc)), stream_), "dbias");
  }
  void EmbeddingForward(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t b, int64_t t, int64_t c,
                        int64_t vocab_first, int64_t vocab_count) override {
    Check(kernels::EmbeddingForward(out, tokens, wte, wpe, b, t, c, vocab_first, vocab_count, stream_),
          "EmbeddingForward");
  }
  void EmbeddingBackward(T* dwte, T* dwpe, const T* dout, const uint32_t* tokens, int64_t b, int64_t t, int64_t c,
                         int64_t vocab_first, int64_t vocab_count) override {
    void* scratch = Scratch(EmbeddingBackwardWorkspaceBytes(b, t));
    Check(kernels::EmbeddingBackward(dwte, dwpe, dout, tokens, b, t, c, vocab_first, vocab_count, scratch, stream_),
          "EmbeddingBackward");
  }
  void LayerNormForward(T* out, float* mean, float* rstd, const T* in, const T* w, const T* bias, int64_t n,
                        int64_t c) override {
    Check(kernels::LayerNormForward(out, mean, rstd, in, w, bias, n, c, stream_), "LayerNormForward");
  }
  void LayerNormBackward(T* din, T* dw, T* db, const T* dout, const T* in, const T* w, const float* mean,
                         const float* rstd, int64_t n, int64_t c) override {
    void* scratch = Scratch(NormBackwardWorkspaceBytes(n, c));
    Check(kernels::LayerNormBackward(din, dw, db, dout, in, w, mean, rstd, n, c, scratch, stream_),
          "LayerNormBackward");
  }
  void RmsNormForward(T* out, float* rstd, const T* in, const T* w, int64_t n, int64_t c) override {
    Check(kernels::RmsNormForward(out, rstd, in, w, n, c, stream_), "RmsNormForward");
  }
  void RmsNormBackward(T* din, T* dw, const T* dout, const T* in, const T* w, const float* rstd, int64_t n,
                       int64_t c) override {
    void* scratch = Scratch(NormBackwardWorkspaceBytes(n, c));
    Check(kernels::RmsNormBackward(din, dw, dout, in, w, rstd, n, c, scratch, stream_), "RmsNormBackward");
  }
  void GeluForward(T* out, const T* in, int64_t n) override {
    Check(kernels::GeluForward(out, in, n, stream_), "GeluForward");
  }
  void GeluBackward(T* din, const T* in, const T* dout, int64_t n) override {
    Check(kernels::GeluBackward(din, in, dout, n, stream_), "GeluBackward");
  }
  void SwigluForward(T* out, const T* gate, const T* up, int64_t n) override {
    Check(kernels::SwigluForward(out, gate, up, n, stream_), "SwigluForward");
  }
  void SwigluBackward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) override {
    Check(kernels::SwigluBackward(dgate, dup, dout, gate, up, n, stream_), "SwigluBackward");
  }
  void ResidualForward(T* out, const T* a, const T* b, int64_t n) override {
    Check(kernels::ResidualForward(out, a, b, n, stream_), "ResidualForward");
  }
  void ResidualBackward(T* da, T* db, const T* dout, int64_t n) override {
    Check(kernels::ResidualBackward(da, db, dout, n, stream_), "ResidualBackward");
  }
  void RopeForward(T* x, int64_t b, int64_t t, int64_t heads, int64_t hd, double theta) override {
    Check(kernels::RopeForward(x, b, t, heads, hd, theta, stream_), "RopeForward");
  }
  void RopeBackward(T* dx, int64_t b, int64_t t, int64_t heads, int64_t hd, double theta) override {
    Check(kernels::RopeBackward(dx, b, t, heads, hd, theta, stream_), "RopeBackward");
  }
  auto AttentionStateBytes(const AttentionShape& s) const -> size_t override { return AttentionLseBytes(s); }
  void AttentionForward(T* out, void* state, const T* q, const T* k, const T* v, const AttentionShape& s) override {
    Check(kernels::AttentionForward(out, static_cast<float*>(state), q, k, v, s, stream_), "AttentionForward");
  }
  void AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* out, const void* state, const T* q, const T* k,
                         const T* v, const AttentionShape& s) override {
    void* scratch = Scratch(AttentionBackwardWorkspaceBytes(s));
    Check(kernels::AttentionBackward(dq, dk, dv, dout, out, static_cast<const float*>(state), q, k, v, s, scratch,
                                     stream_),
          "AttentionBackward");
  }
  void CrossEntropyStats(float* row_max, float* target_logit, const T* logits, const uint32_t* targets, int64_t n,
                         int64_t v, int64_t vocab_first) override {
    Check(kernels::CrossEntropyStats(row_max, target_logit, logits, targets, n, v, vocab_first, stream_),
          "CrossEntropyStats");
  }
  void CrossEntropySoftmax(T* probs, float* row_sum, const T* logits, const float* row_max, int64_t n,
                           int64_t v) override {
    Check(kernels::CrossEntropySoftmax(probs, row_sum, logits, row_max, n, v, stream_), "CrossEntropySoftmax");
  }
  void CrossEntropyFinish(float* losses, T* probs, const float* row_sum, const float* row_max,
                          const float* target_logit, int64_t n, int64_t v) override {
    Check(kernels::CrossEntropyFinish(losses, probs, row_sum, row_max, target_logit, n, v, stream_),
          "CrossEntropyFinish");
  }
  void CrossEntropyBackward(T* dlogits, const T* probs, const uint32_t* targets, const float* dlosses, int64_t n,
                            int64_t v, int64_t vocab_first) override {
    Check(kernels::CrossEntropyBackward(dlogits, probs, targets, dlosses, n, v, vocab_first, stream_),
          "CrossEntropyBackward");
  }
  void MaxOverBlocks(float* out, const float* blocks, int64_t count, int64_t nblocks) override {
    Check(kernels::MaxOverBlocks(out, blocks, count, nblocks, stream_), "MaxOverBlocks");
  }
  auto SquaredNorm(const T* x, const std::vector<optim::ElementRun>& runs) -> double override {
    const DeviceRun* device_runs = Runs(runs, norm_runs_);
    int64_t counted = norm_runs_.host.empty() ? 0 : norm_runs_.host.back().before + norm_runs_.host.back().count;
    Check(kernels::SquaredNorm(static_cast<double*>(norm_out_), x, device_runs, norm_runs_.count(), counted,
                               Scratch(SquaredNormWorkspaceBytes()), stream_),
          "SquaredNorm");
    double sum = 0;
    CopyToHost(&sum, norm_out_, sizeof(sum));
    return sum;
  }
  void Scale(T* x, int64_t n, float scale) override { Check(kernels::Scale(x, n, scale, stream_), "Scale"); }
  void FromFloat(T* to, const float* from, int64_t n) override {
    if constexpr (std::is_same_v<T, float>) {
      if (n > 0) {
        Check(cudaMemcpyAsync(to, from, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
              "FromFloat");
      }
    } else {
      Check(RoundToBf16(to, from, n, stream_), "FromFloat");
    }
  }
  void AdamW(float* master, const T* grads, float* m, float* v, int64_t n,
             const std::vector<optim::ElementRun>& decayed, const optim::ElementScalars& s, T* publish) override {
    const DeviceRun* device_runs = Runs(decayed, decay_runs_);
    Check(AdamWUpdate(master, grads, m, v, n, device_runs, decay_runs_.count(), s, publish, stream_), "AdamW");
  }

 private:
  // Memory calls also come from the engine's communication threads, whose
  // current device is CUDA's default: make it this backend's GPU.
  void OnDevice() const {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != device_) Check(cudaSetDevice(device_), "cudaSetDevice");
  }

  void Check(cudaError_t e, const char* what) const {
    if (e == cudaSuccess) return;
    Fatal(device_, fmt::format("{}: {}: {}", what, cudaGetErrorName(e), cudaGetErrorString(e)));
  }

  [[noreturn]] void OutOfMemory(size_t bytes, cudaError_t e) const {
    (void)cudaGetLastError();
    size_t free = 0, total = 0;
    (void)cudaMemGetInfo(&free, &total);
    Fatal(device_, fmt::format("out of memory: cannot allocate {:.3f} GiB ({}; {:.3f} of {:.3f} GiB free); use a "
                               "smaller micro-batch, recompute, or more ranks",
                               static_cast<double>(bytes) / kGiB, cudaGetErrorName(e), static_cast<double>(free) / kGiB,
                               static_cast<double>(total) / kGiB));
  }

  void Gemm(const GemmShape& s, const T* a, const T* b, T* d, float beta, const T* bias) {
    if (std::string error = gemm_->Run(s, a, b, d, beta, bias); !error.empty()) Fatal(device_, error);
  }

  // At least `bytes` of device scratch; grows (after the queued work that
  // may still read the old one) and never shrinks.
  auto Scratch(size_t bytes) -> void* {
    if (bytes <= scratch_bytes_) return scratch_;
    Synchronize();
    if (scratch_) Check(cudaFree(scratch_), "cudaFree");
    scratch_ = nullptr, scratch_bytes_ = 0;
    if (cudaError_t e = cudaMalloc(&scratch_, bytes); e != cudaSuccess) OutOfMemory(bytes, e);
    scratch_bytes_ = bytes;
    return scratch_;
  }

  // Runs of a flat buffer on the device, uploaded again only when they change
  // (the engine passes the same ones every step).
  struct RunCache {
    std::vector<optim::ElementRun> key;
    std::vector<DeviceRun> host;
    DeviceRun* device = nullptr;
    size_t capacity = 0;
    auto count() const -> int64_t { return static_cast<int64_t>(host.size()); }
  };

  auto Runs(const std::vector<optim::ElementRun>& runs, RunCache& cache) -> const DeviceRun* {
    auto same = [](const optim::ElementRun& a, const optim::ElementRun& b) {
      return a.first == b.first && a.count == b.count;
    };
    if (cache.device && std::equal(runs.begin(), runs.end(), cache.key.begin(), cache.key.end(), same)) {
      return cache.device;
    }
    cache.key = runs;
    cache.host.clear();
    int64_t before = 0;
    for (const optim::ElementRun& r : runs) cache.host.push_back({r.first, r.count, before}), before += r.count;
    if (cache.host.size() > cache.capacity || !cache.device) {
      if (cache.device) Free(cache.device);
      cache.capacity = std::max<size_t>(cache.host.size(), 1);
      cache.device = static_cast<DeviceRun*>(Allocate(cache.capacity * sizeof(DeviceRun)));
    }
    if (!cache.host.empty()) CopyFromHost(cache.device, cache.host.data(), cache.host.size() * sizeof(DeviceRun));
    return cache.device;
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  RunCache norm_runs_, decay_runs_;
  void* norm_out_ = nullptr;  // one double
  std::unique_ptr<CublasLtGemm> gemm_;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

}  // namespace

auto VisibleDevicesNote() -> std::string {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? fmt::format(" (CUDA_VISIBLE_DEVICES={})", v) : std::string();
}

auto VisibleGpus() -> int {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

auto HeadDimProblem(int64_t head_dim) -> std::string {
  if (head_dim > 0 && AttentionTakesHeadDim(head_dim)) return {};
  return fmt::format(
      "the GPU's attention kernels take heads whose width (hidden / heads) is a multiple of {} up to {}, and this "
      "model's is {}",
      kAttentionHeadDimStep, kAttentionMaxHeadDim, head_dim);
}

auto DeviceProblem(int device) -> std::string {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    (void)cudaGetLastError();
    int driver = 0, runtime = 0;
    (void)cudaDriverGetVersion(&driver), (void)cudaRuntimeGetVersion(&runtime);
    if (e == cudaErrorInsufficientDriver && driver == 0) return "no usable GPU: this machine has no NVIDIA driver";
    if (e == cudaErrorInsufficientDriver) {
      return fmt::format(
          "no usable GPU: the NVIDIA driver supports CUDA {}.{}, older than this avf-run's CUDA {}.{}; "
          "update the driver",
          driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    }
    return fmt::format("no usable GPU: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
  }
  if (count == 0) return "no GPU is visible" + VisibleDevicesNote();
  if (device < 0 || device >= count) {
    return fmt::format("GPU {} is not visible: this machine shows {} GPU{}{}", device, count, count == 1 ? "" : "s",
                       VisibleDevicesNote());
  }
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, device); e != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("GPU {}: {} ({})", device, cudaGetErrorString(e), cudaGetErrorName(e));
  }
  if (p.major < 8) {
    return fmt::format("GPU {} is an {} (sm_{}{}); this avf-run holds GPU code for sm_80 (A100) and later only", device,
                       p.name, p.major, p.minor);
  }
  return {};
}

auto DeviceName(int device) -> std::string {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("GPU {}", device);
  }
  return fmt::format("{} (sm_{}{}, {:.1f} GiB)", p.name, p.major, p.minor,
                     static_cast<double>(p.totalGlobalMem) / kGiB);
}

template <typename T>
auto CreateBackend(int device) -> std::unique_ptr<backend::Kernels<T>> {
  return std::make_unique<CudaKernels<T>>(device);
}

template auto CreateBackend<float>(int) -> std::unique_ptr<backend::Kernels<float>>;
template auto CreateBackend<backend::Bf16>(int) -> std::unique_ptr<backend::Kernels<backend::Bf16>>;

}  // namespace avf::kernels
