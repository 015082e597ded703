// Token and position embeddings (kernels.h). Forward: one thread per output
// element. Backward without atomics: dwpe by one thread per (position,
// column), summing the batch in order; dwte by sorting the rows by token
// with CUB's radix sort (stable, so each token's rows stay in row order) and
// one thread per (token, column), summing that token's rows in order. Each
// sum is fp32 and added into the gradient with one rounding, as on the CPU.
#include <algorithm>
#include <cstdint>
#include <cub/cub.cuh>

#include "kernels/device.cuh"
#include "kernels/kernels.h"

namespace avf::kernels {

namespace {

using device::GlobalThread;
using device::GridStride;
using device::Load;
using device::Store;

// out(B*T x C) = wte[token - vocab_first] + wpe[row % T]: a token outside
// the slice gives no wte term and a null wpe no wpe term. A single term is
// copied bit for bit, none gives zero, as on the CPU.
template <typename T>
__global__ void embedding_forward_kernel(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t n,
                                         int64_t t, int64_t c, int64_t vocab_first, int64_t vocab_count) {
  for (int64_t idx = GlobalThread(); idx < n * c; idx += GridStride()) {
    int64_t i = idx / c, j = idx % c;
    int64_t row = static_cast<int64_t>(tokens[i]) - vocab_first;
    bool in_slice = row >= 0 && row < vocab_count;
    const T* p = wpe != nullptr ? wpe + i % t * c + j : nullptr;
    if (in_slice && p != nullptr) {
      out[idx] = Store<T>(Load(wte[row * c + j]) + Load(*p));
    } else if (in_slice) {
      out[idx] = wte[row * c + j];
    } else if (p != nullptr) {
      out[idx] = *p;
    } else {
      out[idx] = T{};
    }
  }
}

// dwpe(T x C) += the sum over b, in order, of dout(B, T, C)[b].
template <typename T>
__global__ void embedding_position_sums_kernel(T* dwpe, const T* dout, int64_t b, int64_t t, int64_t c) {
  for (int64_t idx = GlobalThread(); idx < t * c; idx += GridStride()) {
    float sum = 0.0f;
    for (int64_t bb = 0; bb < b; ++bb) sum += Load(dout[bb * t * c + idx]);
    device::AddTo(dwpe[idx], sum);
  }
}

// keys(N) = token - vocab_first, or `outside` for a token outside the
// slice; rows(N) = 0, 1, ..., N - 1.
__global__ void embedding_sort_keys_kernel(uint32_t* keys, uint32_t* rows, const uint32_t* tokens, int64_t n,
                                           int64_t vocab_first, int64_t vocab_count, uint32_t outside) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    int64_t row = static_cast<int64_t>(tokens[i]) - vocab_first;
    keys[i] = row >= 0 && row < vocab_count ? static_cast<uint32_t>(row) : outside;
    rows[i] = static_cast<uint32_t>(i);
  }
}

// dwte(vocab_count x C) += dout(N x C) rows by token: keys(N) sorted, rows(N)
// their batch rows, ascending within a key. Thread (k, j) with k the first
// of its key's run sums column j of the run's rows, in order, and adds it.
template <typename T>
__global__ void embedding_token_sums_kernel(T* dwte, const T* dout, const uint32_t* keys, const uint32_t* rows,
                                            const uint32_t* tokens, int64_t n, int64_t c, int64_t vocab_first,
                                            int64_t vocab_count) {
  for (int64_t idx = GlobalThread(); idx < n * c; idx += GridStride()) {
    int64_t k = idx / c, j = idx % c;
    uint32_t key = keys[k];
    if (k > 0 && keys[k - 1] == key) continue;
    int64_t row = static_cast<int64_t>(tokens[rows[k]]) - vocab_first;
    if (row < 0 || row >= vocab_count) continue;  // the run of tokens outside the slice
    float sum = 0.0f;
    for (int64_t r = k; r < n && keys[r] == key; ++r) sum += Load(dout[rows[r] * c + j]);
    device::AddTo(dwte[row * c + j], sum);
  }
}

// The workspace of n rows: keys and rows, each double-buffered for the
// radix sort, then CUB's scratch. CUB's need depends on the GPU it runs on
// (its tuning), so the workspace takes a bound far above it, kSortSlack + 8
// bytes a row (CUB's one-sweep sort of sm_80 and sm_90 takes a few KiB plus
// 1 KiB per tile of thousands of rows), and EmbeddingBackward checks it.
constexpr size_t kAlign = 256;
constexpr size_t kSortSlack = size_t{1} << 20;

auto Aligned(size_t bytes) -> size_t { return (bytes + kAlign - 1) / kAlign * kAlign; }
auto ArrayBytes(int64_t n) -> size_t { return Aligned(static_cast<size_t>(n) * sizeof(uint32_t)); }
auto SortScratchBytes(int64_t n) -> size_t { return kSortSlack + 8 * static_cast<size_t>(n); }

// Sorts the n rows by their key in the slice and adds each token's rows into dwte.
template <typename T>
auto AddTokenSums(T* dwte, const T* dout, const uint32_t* tokens, int64_t n, int64_t c, int64_t vocab_first,
                  int64_t vocab_count, void* workspace, cudaStream_t stream) -> cudaError_t {
  auto* base = static_cast<char*>(workspace);
  size_t array = ArrayBytes(n);
  auto* keys = reinterpret_cast<uint32_t*>(base);
  auto* rows = reinterpret_cast<uint32_t*>(base + 2 * array);
  cub::DoubleBuffer<uint32_t> sort_keys(keys, reinterpret_cast<uint32_t*>(base + array));
  cub::DoubleBuffer<uint32_t> sort_rows(rows, reinterpret_cast<uint32_t*>(base + 3 * array));
  auto outside = static_cast<uint32_t>(std::min<int64_t>(vocab_count, UINT32_MAX));
  int end_bit = 1;  // the bits of `outside`, the largest key
  while (end_bit < 32 && (outside >> end_bit) != 0) ++end_bit;
  auto items = static_cast<int>(n);

  embedding_sort_keys_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(keys, rows, tokens, n, vocab_first,
                                                                               vocab_count, outside);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  size_t need = 0, scratch = SortScratchBytes(n);
  err = cub::DeviceRadixSort::SortPairs(nullptr, need, sort_keys, sort_rows, items, 0, end_bit, stream);
  if (err != cudaSuccess) return err;
  if (need > scratch) return cudaErrorInvalidValue;
  err = cub::DeviceRadixSort::SortPairs(base + 4 * array, scratch, sort_keys, sort_rows, items, 0, end_bit, stream);
  if (err != cudaSuccess) return err;
  embedding_token_sums_kernel<<<device::Blocks(n * c), device::kBlock, 0, stream>>>(
      dwte, dout, sort_keys.Current(), sort_rows.Current(), tokens, n, c, vocab_first, vocab_count);
  return cudaGetLastError();
}

}  // namespace

template <typename T>
auto EmbeddingForward(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t b, int64_t t, int64_t c,
                      int64_t vocab_first, int64_t vocab_count, cudaStream_t stream) -> cudaError_t {
  int64_t n = b * t;
  return device::Run({b, t, c, vocab_first, vocab_count}, n * c, [&] {
    embedding_forward_kernel<<<device::Blocks(n * c), device::kBlock, 0, stream>>>(out, tokens, wte, wpe, n, t, c,
                                                                                   vocab_first, vocab_count);
  });
}

auto EmbeddingBackwardWorkspaceBytes(int64_t b, int64_t t) -> size_t {
  int64_t n = b < 0 || t < 0 ? 0 : b * t;
  return 4 * ArrayBytes(n) + SortScratchBytes(n);
}

// Rows are sorted with 32-bit indices: B * T above INT32_MAX is refused.
template <typename T>
auto EmbeddingBackward(T* dwte, T* dwpe, const T* dout, const uint32_t* tokens, int64_t b, int64_t t, int64_t c,
                       int64_t vocab_first, int64_t vocab_count, void* workspace, cudaStream_t stream) -> cudaError_t {
  if (b < 0 || t < 0 || c < 0 || vocab_first < 0 || vocab_count < 0) return cudaErrorInvalidValue;
  int64_t n = b * t;
  if (n > INT32_MAX) return cudaErrorInvalidValue;
  if (n * c == 0) return cudaSuccess;
  if (dwpe != nullptr) {
    embedding_position_sums_kernel<<<device::Blocks(t * c), device::kBlock, 0, stream>>>(dwpe, dout, b, t, c);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  if (vocab_count == 0) return cudaSuccess;
  return AddTokenSums(dwte, dout, tokens, n, c, vocab_first, vocab_count, workspace, stream);
}

#define AVF_EMBEDDING_KERNELS(T)                                                                                     \
  template auto EmbeddingForward<T>(T*, const uint32_t*, const T*, const T*, int64_t, int64_t, int64_t, int64_t,     \
                                    int64_t, cudaStream_t)                                                           \
      ->cudaError_t;                                                                                                 \
  template auto EmbeddingBackward<T>(T*, T*, const T*, const uint32_t*, int64_t, int64_t, int64_t, int64_t, int64_t, \
                                     void*, cudaStream_t)                                                            \
      ->cudaError_t;

AVF_EMBEDDING_KERNELS(float)
AVF_EMBEDDING_KERNELS(Bf16)

}  // namespace avf::kernels
