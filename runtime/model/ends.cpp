// The two ends of the model, vocab parallel (Megatron): each tensor rank
// holds vocab / T rows of the embedding and of the output projection. The
// embedding's partial lookups are summed over the group; the cross-entropy
// combines the shards' row maxima, target logits and exponential sums, so
// no rank ever holds the full logits. Also the workspace's sizes.
#include <vector>

#include "model/layers.h"

namespace avf::model {

namespace {

template <typename T>
auto HeadWeight(const LayerContext<T>& x) -> int64_t {
  return x.layout.lm_head >= 0 ? x.layout.lm_head : x.layout.wte;
}

template <typename T>
void FinalNorm(const LayerContext<T>& x, const T* in, HeadActs<T>& h) {
  if (x.config.arch == Arch::Gpt2) {
    x.k.LayerNormForward(h.lnf.data(), h.mean.data(), h.rstd.data(), in, x.P(x.layout.lnf_w), x.P(x.layout.lnf_b),
                         x.rows(), x.config.hidden);
  } else {
    x.k.RmsNormForward(h.lnf.data(), h.rstd.data(), in, x.P(x.layout.lnf_w), x.rows(), x.config.hidden);
  }
}

template <typename T>
auto GatheredRows(const LayerContext<T>& x, const T* rows, Buffer<T>& into) -> const T* {
  if (!x.sequence_parallel) return rows;
  x.tp.AllGather(rows, into.data(), x.rows() * x.config.hidden);
  return into.data();
}

}  // namespace

template <typename T>
void ReserveHead(const LayerContext<T>& x, HeadActs<T>& h) {
  int64_t rows = x.rows(), C = x.config.hidden;
  h.lnf = x.Alloc(rows * C), h.mean = x.AllocWide(rows), h.rstd = x.AllocWide(rows);
  h.probs = x.Alloc(x.n() * x.layout.vocab_count), h.losses = x.AllocWide(x.n());
}

template <typename T>
void ReserveWorkspace(const LayerContext<T>& x) {
  const ModelConfig& c = x.config;
  Workspace<T>& w = x.w;
  int64_t n = x.n(), rows = x.rows(), C = c.hidden, t = x.tp.size();
  int64_t q = c.heads / t * c.head_dim(), kv = c.kv_heads / t * c.head_dim(), ffn = c.ffn / t;
  int64_t split = c.arch == Arch::Llama ? n * ffn : 0;
  w.qkv = x.Alloc(n * (q + 2 * kv)), w.full = x.Alloc(n * C), w.partial = x.Alloc(n * C), w.rows = x.Alloc(rows * C);
  w.gate = x.Alloc(split), w.up = x.Alloc(split), w.dgate = x.Alloc(split), w.dup = x.Alloc(split);
  w.dfull = x.Alloc(n * C), w.dpartial = x.Alloc(n * C), w.drows = x.Alloc(rows * C);
  w.dx2 = x.Alloc(rows * C), w.dz = x.Alloc(rows * C), w.dy = x.Alloc(rows * C);
  w.dact = x.Alloc(n * ffn), w.dh = x.Alloc(n * c.mlp_in_dim() / t), w.dattn = x.Alloc(n * q);
  w.dq = x.Alloc(n * q), w.dk = x.Alloc(n * kv), w.dv = x.Alloc(n * kv), w.dqkv = x.Alloc(n * (q + 2 * kv));
  bool head = x.layout.lnf_w >= 0;
  w.logits = x.Alloc(head ? n * x.layout.vocab_count : 0);
  w.row_max = x.AllocWide(n), w.maxes = x.AllocWide(n * t), w.target = x.AllocWide(n), w.row_sum = x.AllocWide(n);
  w.dlosses = x.AllocWide(n);
  std::vector<Wide<T>> mean_weights(static_cast<size_t>(n), static_cast<Wide<T>>(1.0 / static_cast<double>(n)));
  x.k.CopyFromHost(w.dlosses.data(), mean_weights.data(), mean_weights.size() * sizeof(Wide<T>));
}

// Position embeddings are added by tensor rank 0 only, so the sum has them once.
template <typename T>
void EmbedForward(const LayerContext<T>& x, const uint32_t* tokens, T* out) {
  const ParamLayout& l = x.layout;
  int64_t C = x.config.hidden, rc = x.rows() * C;
  T* partial = x.w.partial.data();
  const T* wpe = x.tp.rank() == 0 ? x.P(l.wpe) : nullptr;
  x.k.EmbeddingForward(partial, tokens, x.P(l.wte), wpe, x.batch, x.seq, C, l.vocab_first, l.vocab_count);
  if (x.sequence_parallel) {
    x.tp.ReduceScatter(partial, out, rc);
  } else {
    x.tp.AllReduce(partial, rc);
    x.k.Copy2D(out, 0, partial, 0, static_cast<size_t>(rc) * sizeof(T), 1);
  }
}

template <typename T>
void EmbedBackward(const LayerContext<T>& x, const uint32_t* tokens, const T* dout) {
  const ParamLayout& l = x.layout;
  const T* dfull = GatheredRows(x, dout, x.w.dfull);
  x.k.EmbeddingBackward(x.G(l.wte), x.G(l.wpe), dfull, tokens, x.batch, x.seq, x.config.hidden, l.vocab_first,
                        l.vocab_count);
}

template <typename T>
auto HeadForward(const LayerContext<T>& x, const T* in, const uint32_t* targets, HeadActs<T>& h) -> double {
  Workspace<T>& w = x.w;
  int64_t n = x.n(), C = x.config.hidden, v = x.layout.vocab_count, t = x.tp.size();
  FinalNorm(x, in, h);
  const T* lnf = GatheredRows(x, h.lnf.data(), w.full);
  x.k.MatmulForward(w.logits.data(), lnf, x.P(HeadWeight(x)), static_cast<const T*>(nullptr), n, C, v);
  x.k.CrossEntropyStats(w.row_max.data(), w.target.data(), w.logits.data(), targets, n, v, x.layout.vocab_first);
  if (t > 1) {
    x.tp.AllGather(w.row_max.data(), w.maxes.data(), n);
    x.k.MaxOverBlocks(w.row_max.data(), w.maxes.data(), n, t);
    x.tp.AllReduce(w.target.data(), n);
  }
  x.k.CrossEntropySoftmax(h.probs.data(), w.row_sum.data(), w.logits.data(), w.row_max.data(), n, v);
  x.tp.AllReduce(w.row_sum.data(), n);
  x.k.CrossEntropyFinish(h.losses.data(), h.probs.data(), w.row_sum.data(), w.row_max.data(), w.target.data(), n, v);
  std::vector<Wide<T>> losses(static_cast<size_t>(n));
  x.k.CopyToHost(losses.data(), h.losses.data(), losses.size() * sizeof(Wide<T>));
  double sum = 0;
  for (Wide<T> loss : losses) sum += loss;
  return sum / static_cast<double>(n);
}

template <typename T>
void HeadBackward(const LayerContext<T>& x, const T* in, const uint32_t* targets, HeadActs<T>& h, T* dx) {
  Workspace<T>& w = x.w;
  const ParamLayout& l = x.layout;
  int64_t n = x.n(), C = x.config.hidden, v = l.vocab_count;
  // The logits are not needed after the loss: their buffer takes d(logits).
  T* dlogits = w.logits.data();
  w.logits.Zero(), w.dpartial.Zero();
  x.k.CrossEntropyBackward(dlogits, h.probs.data(), targets, w.dlosses.data(), n, v, l.vocab_first);
  const T* lnf = GatheredRows(x, h.lnf.data(), w.full);
  x.k.MatmulBackward(w.dpartial.data(), x.G(HeadWeight(x)), static_cast<T*>(nullptr), dlogits, lnf, x.P(HeadWeight(x)),
                     n, C, v);
  const T* dlnf = w.dpartial.data();
  if (x.sequence_parallel) {
    x.tp.ReduceScatter(w.dpartial.data(), w.drows.data(), x.rows() * C);
    dlnf = w.drows.data();
  } else {
    x.tp.AllReduce(w.dpartial.data(), n * C);
  }
  if (x.config.arch == Arch::Gpt2) {
    x.k.LayerNormBackward(dx, x.G(l.lnf_w), x.G(l.lnf_b), dlnf, in, x.P(l.lnf_w), h.mean.data(), h.rstd.data(),
                          x.rows(), C);
  } else {
    x.k.RmsNormBackward(dx, x.G(l.lnf_w), dlnf, in, x.P(l.lnf_w), h.rstd.data(), x.rows(), C);
  }
}

#define AVF_ENDS(T)                                                                                      \
  template void ReserveHead<T>(const LayerContext<T>&, HeadActs<T>&);                                    \
  template void ReserveWorkspace<T>(const LayerContext<T>&);                                             \
  template void EmbedForward<T>(const LayerContext<T>&, const uint32_t*, T*);                            \
  template void EmbedBackward<T>(const LayerContext<T>&, const uint32_t*, const T*);                     \
  template auto HeadForward<T>(const LayerContext<T>&, const T*, const uint32_t*, HeadActs<T>&)->double; \
  template void HeadBackward<T>(const LayerContext<T>&, const T*, const uint32_t*, HeadActs<T>&, T*);

AVF_ENDS(float)
AVF_ENDS(double)
AVF_ENDS(backend::Bf16)

}  // namespace avf::model
