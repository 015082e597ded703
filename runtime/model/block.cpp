// The transformer block, tensor parallel (Megatron): QKV and fc are
// column-parallel (this rank's heads and MLP columns), the attention and MLP
// output projections row-parallel, so the block needs one reduction of the
// attention's and one of the MLP's output in forward, and one of the
// gradient of each region's input in backward. A row-parallel bias is added
// by tensor rank 0 only, before the reduction; every rank computes its full
// gradient, so the replicas stay equal.
#include "model/layers.h"

namespace avf::model {

namespace {

// The region's input on all n rows: gathered from the row shards with
// sequence parallelism (into w.full), else the rows themselves.
template <typename T>
auto Gathered(const LayerContext<T>& x, const T* rows, Buffer<T>& into) -> const T* {
  if (!x.sequence_parallel) return rows;
  x.tp.AllGather(rows, into.data(), x.rows() * x.config.hidden);
  return into.data();
}

// The sum over the group of a row-parallel output (n rows): reduce-scattered
// into `rows` with sequence parallelism, else all-reduced in place.
template <typename T>
auto Reduced(const LayerContext<T>& x, T* partial, Buffer<T>& rows) -> const T* {
  if (!x.sequence_parallel) {
    x.tp.AllReduce(partial, x.n() * x.config.hidden);
    return partial;
  }
  x.tp.ReduceScatter(partial, rows.data(), x.rows() * x.config.hidden);
  return rows.data();
}

template <typename T>
void Norm(const LayerContext<T>& x, const T* in, int64_t w, int64_t b, T* out, Wide<T>* mean, Wide<T>* rstd) {
  if (x.config.arch == Arch::Gpt2) x.k.LayerNormForward(out, mean, rstd, in, x.P(w), x.P(b), x.rows(), x.config.hidden);
  else x.k.RmsNormForward(out, rstd, in, x.P(w), x.rows(), x.config.hidden);
}

template <typename T>
void NormBackward(const LayerContext<T>& x, T* din, const T* dout, const T* in, int64_t w, int64_t b,
                  const Wide<T>* mean, const Wide<T>* rstd) {
  int64_t rows = x.rows(), c = x.config.hidden;
  if (x.config.arch == Arch::Gpt2) x.k.LayerNormBackward(din, x.G(w), x.G(b), dout, in, x.P(w), mean, rstd, rows, c);
  else x.k.RmsNormBackward(din, x.G(w), dout, in, x.P(w), rstd, rows, c);
}

// Copies column block [col, col + width) of rows (n x row_width) into dense
// (n x width), or back when `to_rows`.
template <typename T>
void CopyColumns(const LayerContext<T>& x, T* rows, int64_t row_width, int64_t col, T* dense, int64_t width,
                 bool to_rows) {
  size_t e = sizeof(T), n = static_cast<size_t>(x.n());
  size_t row_pitch = static_cast<size_t>(row_width) * e, dense_pitch = static_cast<size_t>(width) * e;
  if (to_rows) x.k.Copy2D(rows + col, row_pitch, dense, dense_pitch, dense_pitch, n);
  else x.k.Copy2D(dense, dense_pitch, rows + col, row_pitch, dense_pitch, n);
}

// This rank's share of the block's widths.
struct LocalDims {
  int64_t hd, heads, kv_heads, q, kv, qkv, ffn, mlp_in;
  template <typename T>
  explicit LocalDims(const LayerContext<T>& x) {
    const ModelConfig& c = x.config;
    int64_t t = x.tp.size();
    hd = c.head_dim(), heads = c.heads / t, kv_heads = c.kv_heads / t;
    q = heads * hd, kv = kv_heads * hd, qkv = q + 2 * kv, ffn = c.ffn / t, mlp_in = c.mlp_in_dim() / t;
  }
  auto attention(int64_t b, int64_t s) const -> backend::AttentionShape { return {b, s, heads, kv_heads, hd}; }
};

template <typename T>
auto RowParallelBias(const LayerContext<T>& x, int64_t offset) -> const T* {
  return x.tp.rank() == 0 ? x.P(offset) : nullptr;
}

template <typename T>
void MlpForward(const LayerContext<T>& x, const BlockParams& p, BlockActs<T>& a) {
  LocalDims d(x);
  Workspace<T>& w = x.w;
  int64_t n = x.n(), C = x.config.hidden;
  const T* ln2 = Gathered(x, a.ln2.data(), w.full);
  x.k.MatmulForward(a.h.data(), ln2, x.P(p.fc_w), x.P(p.fc_b), n, C, d.mlp_in);
  if (x.config.arch == Arch::Gpt2) {
    x.k.GeluForward(a.act.data(), a.h.data(), n * d.ffn);
  } else {
    CopyColumns(x, a.h.data(), d.mlp_in, 0, w.gate.data(), d.ffn, false);
    CopyColumns(x, a.h.data(), d.mlp_in, d.ffn, w.up.data(), d.ffn, false);
    x.k.SwigluForward(a.act.data(), w.gate.data(), w.up.data(), n * d.ffn);
  }
  x.k.MatmulForward(w.partial.data(), a.act.data(), x.P(p.fcproj_w), RowParallelBias(x, p.fcproj_b), n, d.ffn, C);
  const T* z = Reduced(x, w.partial.data(), w.rows);
  x.k.ResidualForward(a.out.data(), a.x2.data(), z, x.rows() * C);
}

// From dz (rows x hidden, the MLP output's gradient) into d(ln2) in w.drows or w.dpartial.
template <typename T>
auto MlpBackward(const LayerContext<T>& x, const BlockParams& p, BlockActs<T>& a, const T* dz) -> const T* {
  LocalDims d(x);
  Workspace<T>& w = x.w;
  int64_t n = x.n(), C = x.config.hidden;
  const T* dz_full = Gathered(x, dz, w.dfull);
  w.dact.Zero(), w.dh.Zero(), w.dpartial.Zero();
  x.k.MatmulBackward(w.dact.data(), x.G(p.fcproj_w), x.G(p.fcproj_b), dz_full, a.act.data(), x.P(p.fcproj_w), n, d.ffn,
                     C);
  if (x.config.arch == Arch::Gpt2) {
    x.k.GeluBackward(w.dh.data(), a.h.data(), w.dact.data(), n * d.ffn);
  } else {
    w.dgate.Zero(), w.dup.Zero();
    CopyColumns(x, a.h.data(), d.mlp_in, 0, w.gate.data(), d.ffn, false);
    CopyColumns(x, a.h.data(), d.mlp_in, d.ffn, w.up.data(), d.ffn, false);
    x.k.SwigluBackward(w.dgate.data(), w.dup.data(), w.dact.data(), w.gate.data(), w.up.data(), n * d.ffn);
    CopyColumns(x, w.dh.data(), d.mlp_in, 0, w.dgate.data(), d.ffn, true);
    CopyColumns(x, w.dh.data(), d.mlp_in, d.ffn, w.dup.data(), d.ffn, true);
  }
  const T* ln2 = Gathered(x, a.ln2.data(), w.full);
  x.k.MatmulBackward(w.dpartial.data(), x.G(p.fc_w), x.G(p.fc_b), w.dh.data(), ln2, x.P(p.fc_w), n, C, d.mlp_in);
  return Reduced(x, w.dpartial.data(), w.drows);
}

// From dy (rows x hidden, the attention output's gradient) into d(ln1).
template <typename T>
auto AttentionBackward(const LayerContext<T>& x, const BlockParams& p, BlockActs<T>& a, const T* dy) -> const T* {
  LocalDims d(x);
  Workspace<T>& w = x.w;
  const ModelConfig& c = x.config;
  int64_t n = x.n(), C = c.hidden;
  const T* dy_full = Gathered(x, dy, w.dfull);
  w.dattn.Zero(), w.dq.Zero(), w.dk.Zero(), w.dv.Zero(), w.dpartial.Zero();
  x.k.MatmulBackward(w.dattn.data(), x.G(p.proj_w), x.G(p.proj_b), dy_full, a.attn.data(), x.P(p.proj_w), n, d.q, C);
  x.k.AttentionBackward(w.dq.data(), w.dk.data(), w.dv.data(), w.dattn.data(), a.attn.data(), a.attention.data(),
                        a.q.data(), a.k.data(), a.v.data(), d.attention(x.batch, x.seq));
  if (c.arch == Arch::Llama) {
    x.k.RopeBackward(w.dq.data(), x.batch, x.seq, d.heads, d.hd, c.rope_theta);
    x.k.RopeBackward(w.dk.data(), x.batch, x.seq, d.kv_heads, d.hd, c.rope_theta);
  }
  CopyColumns(x, w.dqkv.data(), d.qkv, 0, w.dq.data(), d.q, true);
  CopyColumns(x, w.dqkv.data(), d.qkv, d.q, w.dk.data(), d.kv, true);
  CopyColumns(x, w.dqkv.data(), d.qkv, d.q + d.kv, w.dv.data(), d.kv, true);
  const T* ln1 = Gathered(x, a.ln1.data(), w.full);
  x.k.MatmulBackward(w.dpartial.data(), x.G(p.qkv_w), x.G(p.qkv_b), w.dqkv.data(), ln1, x.P(p.qkv_w), n, C, d.qkv);
  return Reduced(x, w.dpartial.data(), w.drows);
}

}  // namespace

template <typename T>
void ReserveBlock(const LayerContext<T>& x, BlockActs<T>& a) {
  LocalDims d(x);
  int64_t n = x.n(), rows = x.rows(), C = x.config.hidden;
  a.ln1 = x.Alloc(rows * C), a.mean1 = x.AllocWide(rows), a.rstd1 = x.AllocWide(rows);
  a.q = x.Alloc(n * d.q), a.k = x.Alloc(n * d.kv), a.v = x.Alloc(n * d.kv);
  a.attention = Buffer<uint8_t>(x.k, x.k.AttentionStateBytes(d.attention(x.batch, x.seq)));
  a.attn = x.Alloc(n * d.q);
  a.x2 = x.Alloc(rows * C), a.ln2 = x.Alloc(rows * C), a.mean2 = x.AllocWide(rows), a.rstd2 = x.AllocWide(rows);
  a.h = x.Alloc(n * d.mlp_in), a.act = x.Alloc(n * d.ffn), a.out = x.Alloc(rows * C);
}

template <typename T>
void BlockForward(const LayerContext<T>& x, const BlockParams& p, const T* in, BlockActs<T>& a) {
  LocalDims d(x);
  Workspace<T>& w = x.w;
  const ModelConfig& c = x.config;
  int64_t n = x.n(), C = c.hidden;
  a.in = in;
  Norm(x, in, p.ln1_w, p.ln1_b, a.ln1.data(), a.mean1.data(), a.rstd1.data());
  const T* ln1 = Gathered(x, a.ln1.data(), w.full);
  x.k.MatmulForward(w.qkv.data(), ln1, x.P(p.qkv_w), x.P(p.qkv_b), n, C, d.qkv);
  CopyColumns(x, w.qkv.data(), d.qkv, 0, a.q.data(), d.q, false);
  CopyColumns(x, w.qkv.data(), d.qkv, d.q, a.k.data(), d.kv, false);
  CopyColumns(x, w.qkv.data(), d.qkv, d.q + d.kv, a.v.data(), d.kv, false);
  if (c.arch == Arch::Llama) {
    x.k.RopeForward(a.q.data(), x.batch, x.seq, d.heads, d.hd, c.rope_theta);
    x.k.RopeForward(a.k.data(), x.batch, x.seq, d.kv_heads, d.hd, c.rope_theta);
  }
  x.k.AttentionForward(a.attn.data(), a.attention.data(), a.q.data(), a.k.data(), a.v.data(),
                       d.attention(x.batch, x.seq));
  x.k.MatmulForward(w.partial.data(), a.attn.data(), x.P(p.proj_w), RowParallelBias(x, p.proj_b), n, d.q, C);
  const T* y = Reduced(x, w.partial.data(), w.rows);
  x.k.ResidualForward(a.x2.data(), in, y, x.rows() * C);
  Norm(x, a.x2.data(), p.ln2_w, p.ln2_b, a.ln2.data(), a.mean2.data(), a.rstd2.data());
  MlpForward(x, p, a);
}

template <typename T>
void BlockBackward(const LayerContext<T>& x, const BlockParams& p, BlockActs<T>& a, const T* dout, T* dx) {
  Workspace<T>& w = x.w;
  int64_t rc = x.rows() * x.config.hidden;
  w.dx2.Zero(), w.dz.Zero();
  x.k.ResidualBackward(w.dx2.data(), w.dz.data(), dout, rc);
  const T* dln2 = MlpBackward(x, p, a, w.dz.data());
  NormBackward(x, w.dx2.data(), dln2, a.x2.data(), p.ln2_w, p.ln2_b, a.mean2.data(), a.rstd2.data());
  w.dy.Zero();
  x.k.ResidualBackward(dx, w.dy.data(), w.dx2.data(), rc);
  const T* dln1 = AttentionBackward(x, p, a, w.dy.data());
  NormBackward(x, dx, dln1, a.in, p.ln1_w, p.ln1_b, a.mean1.data(), a.rstd1.data());
}

#define AVF_BLOCK(T)                                                                                  \
  template void ReserveBlock<T>(const LayerContext<T>&, BlockActs<T>&);                               \
  template void BlockForward<T>(const LayerContext<T>&, const BlockParams&, const T*, BlockActs<T>&); \
  template void BlockBackward<T>(const LayerContext<T>&, const BlockParams&, BlockActs<T>&, const T*, T*);

AVF_BLOCK(float)
AVF_BLOCK(double)
AVF_BLOCK(backend::Bf16)

}  // namespace avf::model
