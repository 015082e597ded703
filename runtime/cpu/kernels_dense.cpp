// Matmul, embedding, activations and residual (kernels.h). Element-wise loops
// widen their inputs to Wide<T>, compute there and round once per output.
#include <algorithm>
#include <utility>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/kernels.h"
#include "cpu/vector_math.h"

namespace avf::cpu {

using backend::Bf16;
using backend::Narrow;
using backend::Widen;
using detail::AddWide;
using detail::Gemm;
using detail::kParallelMin;
using detail::Sigmoid;

namespace {

// sums[j] += column j of rows(n x c): each column summed in Wide<T> in row
// order and added with one rounding (the same result on any thread count);
// threads take blocks of columns.
template <typename T>
void ColumnSums(T* sums, const T* rows, int64_t n, int64_t c) {
  constexpr int64_t kBlock = 64;
#pragma omp parallel for if (n * c >= kParallelMin)
  for (int64_t j0 = 0; j0 < c; j0 += kBlock) {
    int64_t width = std::min(kBlock, c - j0);
    Wide<T> acc[kBlock] = {};
    for (int64_t i = 0; i < n; ++i) {
      const T* row = rows + i * c + j0;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) acc[j] += Widen(row[j]);
    }
    AddWide(sums + j0, acc, width);
  }
}

// Rows of a source (n x c) to sum into rows of a destination: group g adds
// source rows rows[start[g] .. start[g+1]) into destination row dest[g].
struct RowGroups {
  std::vector<int64_t> dest, start, rows;
};

// Each group's rows summed in Wide<T> in row order and added with one
// rounding. Groups write distinct rows, so threads take whole groups: the
// same result on any thread count.
template <typename T>
void AddRowGroups(T* dst, const T* src, int64_t c, const RowGroups& g) {
  auto groups = static_cast<int64_t>(g.dest.size()), rows = static_cast<int64_t>(g.rows.size());
#pragma omp parallel if (rows * c >= kParallelMin)
  {
    std::vector<Wide<T>> sum(static_cast<size_t>(c));
    Wide<T>* acc = sum.data();
#pragma omp for
    for (int64_t k = 0; k < groups; ++k) {
      std::fill_n(acc, c, Wide<T>(0));
      for (int64_t r = g.start[k]; r < g.start[k + 1]; ++r) {
        const T* row = src + g.rows[r] * c;
#pragma omp simd
        for (int64_t j = 0; j < c; ++j) acc[j] += Widen(row[j]);
      }
      AddWide(dst + g.dest[k] * c, acc, c);
    }
  }
}

// The rows of each token of this rank's vocabulary slice, tokens ascending.
auto TokenGroups(const uint32_t* tokens, int64_t rows, int64_t vocab_first, int64_t vocab_count) -> RowGroups {
  std::vector<std::pair<int64_t, int64_t>> by_token;  // (row of the slice, row of the batch)
  for (int64_t i = 0; i < rows; ++i) {
    int64_t row = static_cast<int64_t>(tokens[i]) - vocab_first;
    if (row >= 0 && row < vocab_count) by_token.emplace_back(row, i);
  }
  std::sort(by_token.begin(), by_token.end());
  RowGroups g;
  for (size_t k = 0; k < by_token.size(); ++k) {
    if (k == 0 || by_token[k].first != by_token[k - 1].first) {
      g.dest.push_back(by_token[k].first);
      g.start.push_back(static_cast<int64_t>(k));
    }
    g.rows.push_back(by_token[k].second);
  }
  g.start.push_back(static_cast<int64_t>(by_token.size()));
  return g;
}

// The b rows of each of the t positions.
auto PositionGroups(int64_t b, int64_t t) -> RowGroups {
  RowGroups g;
  for (int64_t pos = 0; pos < t; ++pos) {
    g.dest.push_back(pos);
    g.start.push_back(pos * b);
    for (int64_t bb = 0; bb < b; ++bb) g.rows.push_back(bb * t + pos);
  }
  g.start.push_back(b * t);
  return g;
}

// The activations run in chunks, one thread a chunk, each a function cloned
// per instruction set (their exponentials are compute-bound).
constexpr int64_t kChunk = 1 << 12;

template <typename Chunk>
void ForChunks(int64_t n, const Chunk& chunk) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) chunk(i0, std::min(kChunk, n - i0));
}

constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

template <typename T>
AVF_VECTOR_CLONES void GeluForwardChunk(T* out, const T* in, int64_t n) {
  using W = Wide<T>;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    W x = Widen(in[i]);
    W u = W(kGeluScale) * (x + W(kGeluCubic) * x * x * x);
    out[i] = Narrow<T>(x * Sigmoid(W(2) * u));
  }
}

// d/dx x s(2u) = s + 2 x s (1 - s) du/dx, s = sigmoid(2u); 1 - s is taken as
// sigmoid(-2u), which keeps its digits where s rounds to 1.
template <typename T>
AVF_VECTOR_CLONES void GeluBackwardChunk(T* din, const T* in, const T* dout, int64_t n) {
  using W = Wide<T>;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    W x = Widen(in[i]);
    W u = W(kGeluScale) * (x + W(kGeluCubic) * x * x * x);
    W du = W(kGeluScale) * (W(1) + W(3 * kGeluCubic) * x * x);
    W s = Sigmoid(W(2) * u), one_minus_s = Sigmoid(W(-2) * u);
    W grad = s + W(2) * x * s * one_minus_s * du;
    din[i] = Narrow<T>(Widen(din[i]) + grad * Widen(dout[i]));
  }
}

template <typename T>
AVF_VECTOR_CLONES void SwigluForwardChunk(T* out, const T* gate, const T* up, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    Wide<T> g = Widen(gate[i]);
    out[i] = Narrow<T>(g * Sigmoid(g) * Widen(up[i]));
  }
}

template <typename T>
AVF_VECTOR_CLONES void SwigluBackwardChunk(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) {
  using W = Wide<T>;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    W g = Widen(gate[i]), dy = Widen(dout[i]);
    W s = Sigmoid(g), one_minus_s = Sigmoid(-g);
    dup[i] = Narrow<T>(Widen(dup[i]) + g * s * dy);
    dgate[i] = Narrow<T>(Widen(dgate[i]) + Widen(up[i]) * (s + g * s * one_minus_s) * dy);
  }
}

}  // namespace

// The bias goes into `out` first and the GEMM adds onto it (beta = 1): one
// pass over `out` rather than two, and for bf16 one rounding of product + bias.
template <typename T>
void MatmulForward(T* out, const T* in, const T* weight, const T* bias, int64_t n, int64_t c, int64_t oc) {
  using W = Wide<T>;
  if (bias) {
#pragma omp parallel for if (n * oc >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) std::copy_n(bias, oc, out + i * oc);
  }
  Gemm(false, true, n, oc, c, W(1), in, c, weight, c, W(bias ? 1 : 0), out, oc);
}

// For bf16 each GEMM rounds its C once (beta = 1 adds the old gradient in
// fp32), and dbias is summed in fp32 and added with one rounding.
template <typename T>
void MatmulBackward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, int64_t n, int64_t c,
                    int64_t oc) {
  using W = Wide<T>;
  if (din) Gemm(false, false, n, c, oc, W(1), dout, oc, weight, c, W(1), din, c);
  Gemm(true, false, oc, c, n, W(1), dout, oc, in, c, W(1), dweight, c);
  if (dbias) ColumnSums(dbias, dout, n, oc);
}

template <typename T>
void EmbeddingForward(T* out, const uint32_t* tokens, const T* wte, const T* wpe, int64_t b, int64_t t, int64_t c,
                      int64_t vocab_first, int64_t vocab_count) {
#pragma omp parallel for if (b * t * c >= kParallelMin)
  for (int64_t i = 0; i < b * t; ++i) {
    int64_t row = static_cast<int64_t>(tokens[i]) - vocab_first;
    const T* e = row >= 0 && row < vocab_count ? wte + row * c : nullptr;
    const T* p = wpe ? wpe + (i % t) * c : nullptr;
    T* o = out + i * c;
    if (e && p) {
#pragma omp simd
      for (int64_t j = 0; j < c; ++j) o[j] = Narrow<T>(Widen(e[j]) + Widen(p[j]));
    } else if (e || p) {
      std::copy_n(e ? e : p, c, o);
    } else {
      std::fill_n(o, c, T{});
    }
  }
}

// A token's gradient row is summed over its occurrences in Wide<T> and added
// once, and so is a position's over the batch (see AddRowGroups).
template <typename T>
void EmbeddingBackward(T* dwte, T* dwpe, const T* dout, const uint32_t* tokens, int64_t b, int64_t t, int64_t c,
                       int64_t vocab_first, int64_t vocab_count) {
  AddRowGroups(dwte, dout, c, TokenGroups(tokens, b * t, vocab_first, vocab_count));
  if (dwpe) AddRowGroups(dwpe, dout, c, PositionGroups(b, t));
}

// GELU, tanh form: 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x +
// 0.044715 x^3).
template <typename T>
void GeluForward(T* out, const T* in, int64_t n) {
  ForChunks(n, [&](int64_t i0, int64_t len) { GeluForwardChunk(out + i0, in + i0, len); });
}

template <typename T>
void GeluBackward(T* din, const T* in, const T* dout, int64_t n) {
  ForChunks(n, [&](int64_t i0, int64_t len) { GeluBackwardChunk(din + i0, in + i0, dout + i0, len); });
}

// out = silu(gate) up, silu(g) = g sigmoid(g).
template <typename T>
void SwigluForward(T* out, const T* gate, const T* up, int64_t n) {
  ForChunks(n, [&](int64_t i0, int64_t len) { SwigluForwardChunk(out + i0, gate + i0, up + i0, len); });
}

template <typename T>
void SwigluBackward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) {
  ForChunks(n, [&](int64_t i0, int64_t len) {
    SwigluBackwardChunk(dgate + i0, dup + i0, dout + i0, gate + i0, up + i0, len);
  });
}

template <typename T>
void ResidualForward(T* out, const T* a, const T* b, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = Narrow<T>(Widen(a[i]) + Widen(b[i]));
}

template <typename T>
void ResidualBackward(T* da, T* db, const T* dout, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    da[i] = Narrow<T>(Widen(da[i]) + Widen(dout[i]));
    db[i] = Narrow<T>(Widen(db[i]) + Widen(dout[i]));
  }
}

#define AVF_DENSE_KERNELS(T)                                                                                          \
  template void MatmulForward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t);                        \
  template void MatmulBackward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t);               \
  template void EmbeddingForward<T>(T*, const uint32_t*, const T*, const T*, int64_t, int64_t, int64_t, int64_t,      \
                                    int64_t);                                                                         \
  template void EmbeddingBackward<T>(T*, T*, const T*, const uint32_t*, int64_t, int64_t, int64_t, int64_t, int64_t); \
  template void GeluForward<T>(T*, const T*, int64_t);                                                                \
  template void GeluBackward<T>(T*, const T*, const T*, int64_t);                                                     \
  template void SwigluForward<T>(T*, const T*, const T*, int64_t);                                                    \
  template void SwigluBackward<T>(T*, T*, const T*, const T*, const T*, int64_t);                                     \
  template void ResidualForward<T>(T*, const T*, const T*, int64_t);                                                  \
  template void ResidualBackward<T>(T*, T*, const T*, int64_t);

AVF_DENSE_KERNELS(float)
AVF_DENSE_KERNELS(double)
AVF_DENSE_KERNELS(Bf16)

}  // namespace avf::cpu
