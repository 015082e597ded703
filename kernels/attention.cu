// Causal self-attention with grouped-query heads, flash-style (kernels.h): no
// T x T matrix is kept. The forward walks the key tiles of a query tile with
// an online softmax in fp32 and saves each row's log-sum-exp; the backward
// recomputes the probabilities from it twice, once for dk and dv (a block per
// key tile, over the query tiles and the group's query heads) and once for dq
// (a block per query tile), so that every gradient is summed in registers in
// a fixed order and added once, without atomics.
//
// A block is 128 threads seen as an 8 x 16 grid (ty, tx): in a tile of dot
// products a thread owns rows ty + 8i and columns tx + 16j. Operands pass
// through two shared 64 x 64 fp32 buffers (33 KB), the head dimension in
// chunks of 64 columns, so shared memory does not grow with it; the
// accumulators over the whole head dimension (out, dq, dk, dv) stay in
// registers, sized by D, head_dim rounded up to 64, 128 or 256.
#include <climits>
#include <cmath>
#include <type_traits>

#include "kernels/device.cuh"
#include "kernels/kernels.h"

namespace avf::kernels {

namespace {

using device::Load;
using device::Store;

constexpr int kThreads = 128;
constexpr int kTile = 64;       // keys per tile (forward, dq), queries per tile (dk/dv), head-dim chunk
constexpr int kLd = kTile + 1;  // an odd row stride: a column read across rows hits distinct banks
constexpr int kMinRows = 16;    // the smallest tile of rows a grid is cut into (KeyRows(256))

// Query rows of a forward or dq block and key rows of a dk/dv block, so that
// the accumulators (rows x D over 128 threads) take at most 64 registers.
__host__ __device__ constexpr auto QueryRows(int d) -> int { return d <= 128 ? 64 : 32; }
__host__ __device__ constexpr auto KeyRows(int d) -> int { return kTile * kTile / d; }

struct Dims {
  int t, heads, kv_heads, group, hd;
  float scale;
};

// A head's rows inside (B, T, heads, HD): element (pos, c) at p[pos * ld + c].
template <typename T>
struct Rows {
  T* p;
  int64_t ld;
};

template <typename T>
__device__ __forceinline__ auto HeadRows(T* x, int b, int head, int heads, const Dims& d) -> Rows<T> {
  int64_t ld = int64_t{heads} * d.hd;
  return {x + int64_t{b} * d.t * ld + int64_t{head} * d.hd, ld};
}

// Calls launch(std::integral_constant<int, D>{}), D = hd rounded up to 64, 128 or 256.
template <typename Launch>
void WithHeadDim(int hd, Launch launch) {
  if (hd <= 64) launch(std::integral_constant<int, 64>{});
  else if (hd <= 128) launch(std::integral_constant<int, 128>{});
  else launch(std::integral_constant<int, 256>{});
}

auto Tiles(int t, int rows) -> unsigned { return static_cast<unsigned>((t + rows - 1) / rows); }

// cudaErrorInvalidValue for a negative size or a shape the kernels do not
// take (or whose grid would not fit), else cudaSuccess.
auto Check(const AttentionShape& s) -> cudaError_t {
  for (int64_t x : {s.b, s.t, s.heads, s.kv_heads, s.head_dim}) {
    if (x < 0) return cudaErrorInvalidValue;
  }
  bool head_dim = AttentionTakesHeadDim(s.head_dim);
  bool heads = s.kv_heads == 0 ? s.heads == 0 : s.heads % s.kv_heads == 0;
  bool grid = (s.t + kMinRows - 1) / kMinRows <= device::kMaxBlocks && (s.heads == 0 || s.b <= INT_MAX / s.heads);
  return head_dim && heads && grid ? cudaSuccess : cudaErrorInvalidValue;
}

auto Work(const AttentionShape& s) -> int64_t { return s.b * s.t * s.heads * s.head_dim == 0 ? 0 : 1; }

// Only called on a shape that Check accepts and that has work.
auto DimsOf(const AttentionShape& s) -> Dims {
  auto narrow = [](int64_t x) { return static_cast<int>(x); };
  float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  return {narrow(s.t), narrow(s.heads), narrow(s.kv_heads), narrow(s.heads / s.kv_heads), narrow(s.head_dim), scale};
}

__device__ __forceinline__ auto Ty() -> int { return static_cast<int>(threadIdx.x) / 16; }
__device__ __forceinline__ auto Tx() -> int { return static_cast<int>(threadIdx.x) % 16; }

// The sum (max) over the 16 threads that share a ty, the same in each of them.
__device__ __forceinline__ auto RowSum(float x) -> float {
  for (int offset = 1; offset < 16; offset *= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}
__device__ __forceinline__ auto RowMax(float x) -> float {
  for (int offset = 1; offset < 16; offset *= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// tile(ROWS x kTile) = x[row0 + r][col0 + c] in fp32, zero past t rows or hd columns.
template <int ROWS, typename T>
__device__ __forceinline__ void LoadChunk(float* tile, Rows<const T> x, int row0, int col0, const Dims& d) {
  static_assert(ROWS * kTile % kThreads == 0);
#pragma unroll 8
  for (int it = 0; it < ROWS * kTile / kThreads; ++it) {
    int e = it * kThreads + static_cast<int>(threadIdx.x), r = e / kTile, c = e % kTile;
    bool inside = row0 + r < d.t && col0 + c < d.hd;
    tile[r * kLd + c] = inside ? Load(x.p[(row0 + r) * x.ld + col0 + c]) : 0.0f;
  }
}

// tile[ty + 8i][tx + 16j] = x[i][j].
template <int MI>
__device__ __forceinline__ void StoreTile(float* tile, const float (&x)[MI][4]) {
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) tile[(Ty() + 8 * i) * kLd + Tx() + 16 * j] = x[i][j];
  }
}

// acc[i][j] += the sum over c < n of a[ty + 8i][c] b[tx + 16j][c].
template <int MI>
__device__ __forceinline__ void MulNT(float (&acc)[MI][4], const float* a, const float* b, int n) {
  a += Ty() * kLd;
  b += Tx() * kLd;
#pragma unroll 8
  for (int c = 0; c < n; ++c) {
    float av[MI], bv[4];
#pragma unroll
    for (int i = 0; i < MI; ++i) av[i] = a[8 * i * kLd + c];
#pragma unroll
    for (int j = 0; j < 4; ++j) bv[j] = b[16 * j * kLd + c];
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
  }
}

// acc[i][j] += the sum over r < kTile of a[ty + 8i][r] b[r][tx + 16j].
template <int MI>
__device__ __forceinline__ void MulNN(float (&acc)[MI][4], const float* a, const float* b) {
  a += Ty() * kLd;
  b += Tx();
#pragma unroll 16
  for (int r = 0; r < kTile; ++r) {
    float av[MI], bv[4];
#pragma unroll
    for (int i = 0; i < MI; ++i) av[i] = a[8 * i * kLd + r];
#pragma unroll
    for (int j = 0; j < 4; ++j) bv[j] = b[r * kLd + 16 * j];
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
  }
}

// acc[i][j] += x[x0 + ty + 8i] . y[y0 + tx + 16j] over the head dimension,
// chunk by chunk through the shared tiles sx (8 MI rows) and sy (kTile rows).
template <int MI, typename T>
__device__ void ProductNT(float (&acc)[MI][4], float* sx, Rows<const T> x, int x0, float* sy, Rows<const T> y, int y0,
                          const Dims& d) {
  for (int col0 = 0; col0 < d.hd; col0 += kTile) {
    LoadChunk<8 * MI>(sx, x, x0, col0, d);
    LoadChunk<kTile>(sy, y, y0, col0, d);
    __syncthreads();
    MulNT(acc, sx, sy, min(kTile, d.hd - col0));
    __syncthreads();
  }
}

// acc[ch][i][j] += the sum over r < kTile of a[ty + 8i][r] y[y0 + r][64 ch + tx + 16j]:
// the tile already stored in sa times kTile rows of y, chunk by chunk through sy.
template <int NCH, int MI, typename T>
__device__ void ProductNN(float (&acc)[NCH][MI][4], const float* sa, float* sy, Rows<const T> y, int y0,
                          const Dims& d) {
#pragma unroll
  for (int ch = 0; ch < NCH; ++ch) {
    if (ch * kTile >= d.hd) break;
    LoadChunk<kTile>(sy, y, y0, ch * kTile, d);
    __syncthreads();
    MulNN(acc[ch], sa, sy);
    __syncthreads();
  }
}

// x[row0 + ty + 8i][64 ch + tx + 16j] += scale acc[ch][i][j], inside t x hd.
template <int NCH, int MI, typename T>
__device__ void AddRows(Rows<T> x, int row0, const float (&acc)[NCH][MI][4], float scale, const Dims& d) {
#pragma unroll
  for (int i = 0; i < MI; ++i) {
    int row = row0 + Ty() + 8 * i;
    if (row >= d.t) continue;
#pragma unroll
    for (int ch = 0; ch < NCH; ++ch) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        int col = ch * kTile + Tx() + 16 * j;
        if (col < d.hd) device::AddTo(x.p[row * x.ld + col], scale * acc[ch][i][j]);
      }
    }
  }
}

// Folds raw scores s (rows q0 + ty + 8i, keys k0 + tx + 16j) into each row's
// running max m and this thread's part l of its sum, rescaling o by the
// change of max; s becomes exp(scale s - m), zero above the diagonal.
template <int NCH, int MI>
__device__ __forceinline__ void OnlineSoftmax(float (&s)[MI][4], float (&m)[MI], float (&l)[MI], float (&o)[NCH][MI][4],
                                              int q0, int k0, float scale) {
#pragma unroll
  for (int i = 0; i < MI; ++i) {
    int row = q0 + Ty() + 8 * i;
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      s[i][j] = k0 + Tx() + 16 * j <= row ? s[i][j] * scale : -INFINITY;
      tile_max = fmaxf(tile_max, s[i][j]);
    }
    float m_new = fmaxf(m[i], RowMax(tile_max));
    // While a row has seen no key, everything stays zero (not exp(-inf + inf)).
    float base = m_new == -INFINITY ? 0.0f : m_new;
    float alpha = expf(m[i] - base);
    m[i] = m_new;
    l[i] *= alpha;
#pragma unroll
    for (int ch = 0; ch < NCH; ++ch) {
#pragma unroll
      for (int j = 0; j < 4; ++j) o[ch][i][j] *= alpha;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      s[i][j] = expf(s[i][j] - base);
      l[i] += s[i][j];
    }
  }
}

// Rows q0 + ty + 8i < t: out = o / l (rounded once), lse = m + log l.
template <int NCH, int MI, typename T>
__device__ void FinishForward(Rows<T> out, float* lse, int q0, const float (&o)[NCH][MI][4], const float (&m)[MI],
                              const float (&l)[MI], const Dims& d) {
#pragma unroll
  for (int i = 0; i < MI; ++i) {
    float sum = RowSum(l[i]);
    int row = q0 + Ty() + 8 * i;
    if (row >= d.t) continue;
    if (Tx() == 0) lse[row] = m[i] + logf(sum);
    float inverse = 1.0f / sum;
#pragma unroll
    for (int ch = 0; ch < NCH; ++ch) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        int col = ch * kTile + Tx() + 16 * j;
        if (col < d.hd) out.p[row * out.ld + col] = Store<T>(o[ch][i][j] * inverse);
      }
    }
  }
}

// out(B, T, NH, HD), lse(B, NH, T) from q(B, T, NH, HD), k, v(B, T, KVH, HD).
// Block (b * NH + h, query tile), the last tiles (the most keys) first.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(T* out, float* lse, const T* q, const T* k, const T* v, Dims d) {
  constexpr int kRows = QueryRows(D), MI = kRows / 8, NCH = D / kTile;
  __shared__ float sx[kTile * kLd], sy[kTile * kLd];
  int b = static_cast<int>(blockIdx.x) / d.heads, h = static_cast<int>(blockIdx.x) % d.heads;
  int q0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kRows, last = min(q0 + kRows, d.t) - 1;
  Rows<const T> qh = HeadRows(q, b, h, d.heads, d), kh = HeadRows(k, b, h / d.group, d.kv_heads, d),
                vh = HeadRows(v, b, h / d.group, d.kv_heads, d);
  float o[NCH][MI][4] = {}, m[MI], l[MI];
#pragma unroll
  for (int i = 0; i < MI; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
  }
  for (int k0 = 0; k0 <= last; k0 += kTile) {
    float s[MI][4] = {};
    ProductNT(s, sx, qh, q0, sy, kh, k0, d);
    OnlineSoftmax(s, m, l, o, q0, k0, d.scale);
    StoreTile(sx, s);
    ProductNN(o, sx, sy, vh, k0, d);
  }
  FinishForward(HeadRows(out, b, h, d.heads, d), lse + (int64_t{b} * d.heads + h) * d.t, q0, o, m, l, d);
}

}  // namespace

auto AttentionLseBytes(const AttentionShape& s) -> size_t {
  return Check(s) == cudaSuccess ? static_cast<size_t>(s.b * s.heads * s.t) * sizeof(float) : 0;
}

template <typename T>
auto AttentionForward(T* out, float* lse, const T* q, const T* k, const T* v, const AttentionShape& s,
                      cudaStream_t stream) -> cudaError_t {
  if (cudaError_t e = Check(s); e != cudaSuccess) return e;
  return device::Run({}, Work(s), [&] {
    Dims d = DimsOf(s);
    WithHeadDim(d.hd, [&](auto dim) {
      constexpr int D = decltype(dim)::value;
      dim3 grid(static_cast<unsigned>(s.b * s.heads), Tiles(d.t, QueryRows(D)));
      attention_forward_kernel<T, D><<<grid, kThreads, 0, stream>>>(out, lse, q, k, v, d);
    });
  });
}

namespace {

// dsum(B, NH, T) = the row sums of dout * out (B, T, NH, HD), a warp per row.
template <typename T>
__global__ void attention_dsum_kernel(float* dsum, const T* dout, const T* out, int64_t rows, Dims d) {
  int lane = static_cast<int>(threadIdx.x) % device::kWarp;
  for (int64_t row = device::GlobalThread() / device::kWarp; row < rows; row += device::GridStride() / device::kWarp) {
    float sum = 0.0f;
    for (int c = lane; c < d.hd; c += device::kWarp) sum += Load(dout[row * d.hd + c]) * Load(out[row * d.hd + c]);
    sum = device::WarpSum(sum);
    int64_t bt = row / d.heads, h = row % d.heads;
    if (lane == 0) dsum[(bt / d.t * d.heads + h) * d.t + bt % d.t] = sum;
  }
}

// The gradients' inputs, one (b, head) pair's at a time.
template <typename T>
struct Grads {
  const T *dout, *q, *k, *v;
  const float *lse, *dsum;
};

// One query tile q0 of query head h for the key tile k0 of a dk/dv block:
// p and ds transposed (keys x queries), then dv += p^T dout, dk += ds^T q.
template <int NCH, int MI, typename T>
__device__ void KeyTileStep(float (&dka)[NCH][MI][4], float (&dva)[NCH][MI][4], float* sx, float* sy, const Grads<T>& g,
                            int b, int h, int q0, int k0, const Dims& d) {
  Rows<const T> qh = HeadRows(g.q, b, h, d.heads, d), doh = HeadRows(g.dout, b, h, d.heads, d),
                kh = HeadRows(g.k, b, h / d.group, d.kv_heads, d), vh = HeadRows(g.v, b, h / d.group, d.kv_heads, d);
  const float *lse = g.lse + (int64_t{b} * d.heads + h) * d.t, *dsum = g.dsum + (int64_t{b} * d.heads + h) * d.t;
  float s[MI][4] = {}, dp[MI][4] = {};
  ProductNT(s, sy, kh, k0, sx, qh, q0, d);
  ProductNT(dp, sy, vh, k0, sx, doh, q0, d);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    int row = q0 + Tx() + 16 * j;
    float row_lse = row < d.t ? lse[row] : 0.0f, row_dsum = row < d.t ? dsum[row] : 0.0f;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      bool seen = k0 + Ty() + 8 * i <= row && row < d.t;
      s[i][j] = seen ? expf(s[i][j] * d.scale - row_lse) : 0.0f;
      dp[i][j] = s[i][j] * (dp[i][j] - row_dsum);
    }
  }
  StoreTile(sy, s);
  ProductNN(dva, sy, sx, doh, q0, d);
  StoreTile(sy, dp);
  ProductNN(dka, sy, sx, qh, q0, d);
}

// dk, dv(B, T, KVH, HD) += the gradients through k and v, summed over the
// query heads of each kv head and the query tiles at or below the diagonal.
// Block (b * KVH + kv head, key tile), the first tiles (the most queries) first.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) attention_dkdv_kernel(T* dk, T* dv, Grads<T> g, Dims d) {
  constexpr int kRows = KeyRows(D), MI = kRows / 8, NCH = D / kTile;
  __shared__ float sx[kTile * kLd], sy[kTile * kLd];
  int b = static_cast<int>(blockIdx.x) / d.kv_heads, kvh = static_cast<int>(blockIdx.x) % d.kv_heads;
  int k0 = static_cast<int>(blockIdx.y) * kRows;
  float dka[NCH][MI][4] = {}, dva[NCH][MI][4] = {};
  for (int h = kvh * d.group; h < (kvh + 1) * d.group; ++h) {
    for (int q0 = k0 / kTile * kTile; q0 < d.t; q0 += kTile) KeyTileStep(dka, dva, sx, sy, g, b, h, q0, k0, d);
  }
  AddRows(HeadRows(dk, b, kvh, d.kv_heads, d), k0, dka, d.scale, d);
  AddRows(HeadRows(dv, b, kvh, d.kv_heads, d), k0, dva, 1.0f, d);
}

// dq(B, T, NH, HD) += the gradient through q, over the key tiles at or below
// the diagonal. Block (b * NH + h, query tile), the last tiles first.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) attention_dq_kernel(T* dq, Grads<T> g, Dims d) {
  constexpr int kRows = QueryRows(D), MI = kRows / 8, NCH = D / kTile;
  __shared__ float sx[kTile * kLd], sy[kTile * kLd];
  int b = static_cast<int>(blockIdx.x) / d.heads, h = static_cast<int>(blockIdx.x) % d.heads;
  int q0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kRows, last = min(q0 + kRows, d.t) - 1;
  Rows<const T> qh = HeadRows(g.q, b, h, d.heads, d), doh = HeadRows(g.dout, b, h, d.heads, d),
                kh = HeadRows(g.k, b, h / d.group, d.kv_heads, d), vh = HeadRows(g.v, b, h / d.group, d.kv_heads, d);
  const float *lse = g.lse + (int64_t{b} * d.heads + h) * d.t, *dsum = g.dsum + (int64_t{b} * d.heads + h) * d.t;
  float row_lse[MI], row_dsum[MI], acc[NCH][MI][4] = {};
#pragma unroll
  for (int i = 0; i < MI; ++i) {
    int row = q0 + Ty() + 8 * i;
    row_lse[i] = row < d.t ? lse[row] : 0.0f;
    row_dsum[i] = row < d.t ? dsum[row] : 0.0f;
  }
  for (int k0 = 0; k0 <= last; k0 += kTile) {
    float s[MI][4] = {}, dp[MI][4] = {};
    ProductNT(s, sx, qh, q0, sy, kh, k0, d);
    ProductNT(dp, sx, doh, q0, sy, vh, k0, d);
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      int row = q0 + Ty() + 8 * i;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        bool seen = k0 + Tx() + 16 * j <= row && row < d.t;
        float p = seen ? expf(s[i][j] * d.scale - row_lse[i]) : 0.0f;
        s[i][j] = p * (dp[i][j] - row_dsum[i]);
      }
    }
    StoreTile(sx, s);
    ProductNN(acc, sx, sy, kh, k0, d);
  }
  AddRows(HeadRows(dq, b, h, d.heads, d), q0, acc, d.scale, d);
}

}  // namespace

auto AttentionBackwardWorkspaceBytes(const AttentionShape& s) -> size_t { return AttentionLseBytes(s); }

template <typename T>
auto AttentionBackward(T* dq, T* dk, T* dv, const T* dout, const T* out, const float* lse, const T* q, const T* k,
                       const T* v, const AttentionShape& s, void* workspace, cudaStream_t stream) -> cudaError_t {
  if (cudaError_t e = Check(s); e != cudaSuccess) return e;
  return device::Run({}, Work(s), [&] {
    Dims d = DimsOf(s);
    auto* dsum = static_cast<float*>(workspace);
    int64_t rows = s.b * s.t * s.heads;
    attention_dsum_kernel<T>
        <<<device::Blocks(rows * device::kWarp), device::kBlock, 0, stream>>>(dsum, dout, out, rows, d);
    Grads<T> g{dout, q, k, v, lse, dsum};
    WithHeadDim(d.hd, [&](auto dim) {
      constexpr int D = decltype(dim)::value;
      dim3 kv_grid(static_cast<unsigned>(s.b * s.kv_heads), Tiles(d.t, KeyRows(D)));
      attention_dkdv_kernel<T, D><<<kv_grid, kThreads, 0, stream>>>(dk, dv, g, d);
      dim3 q_grid(static_cast<unsigned>(s.b * s.heads), Tiles(d.t, QueryRows(D)));
      attention_dq_kernel<T, D><<<q_grid, kThreads, 0, stream>>>(dq, g, d);
    });
  });
}

#define AVF_ATTENTION_KERNELS(T)                                                                              \
  template cudaError_t AttentionForward<T>(T*, float*, const T*, const T*, const T*, const AttentionShape&,   \
                                           cudaStream_t);                                                     \
  template cudaError_t AttentionBackward<T>(T*, T*, T*, const T*, const T*, const float*, const T*, const T*, \
                                            const T*, const AttentionShape&, void*, cudaStream_t);

AVF_ATTENTION_KERNELS(float)
AVF_ATTENTION_KERNELS(Bf16)

}  // namespace avf::kernels
