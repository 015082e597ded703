#include "model/transformer.h"

#include <cmath>
#include <random>

namespace avf::model {

namespace {

// Box-Muller on mt19937 bits: std::normal_distribution differs between
// standard libraries, this does not.
auto Normal(std::mt19937_64& gen) -> double {
  constexpr double kScale = 1.0 / 9007199254740992.0;  // 2^-53
  double u1 = (static_cast<double>(gen() >> 11) + 1.0) * kScale;
  double u2 = static_cast<double>(gen() >> 11) * kScale;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

auto EndsWith(const std::string& s, std::string_view tail) -> bool {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

template <typename T>
Transformer<T>::Transformer(ModelConfig config, backend::Kernels<T>& kernels)
    : config_(config), layout_(LayoutOf(config)), k_(kernels) {
  params_ = Alloc(layout_.total);
  grads_ = Alloc(layout_.total);
}

template <typename T>
void Transformer<T>::Initialize(uint64_t seed) {
  std::mt19937_64 gen(seed);
  double residual_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(config_.layers));
  std::vector<T> host(static_cast<size_t>(layout_.total));
  for (const ParamTensor& t : layout_.tensors) {
    bool norm = t.name.find("ln_") != std::string::npos;
    bool bias = EndsWith(t.name, ".bias");
    bool residual = EndsWith(t.name, "attn.proj.weight") || EndsWith(t.name, "mlp.proj.weight") ||
                    EndsWith(t.name, "mlp.down.weight");
    for (int64_t i = 0; i < t.size; ++i) {
      double v = bias ? 0.0 : norm ? 1.0 : 0.02 * Normal(gen) * (residual ? residual_scale : 1.0);
      host[static_cast<size_t>(t.offset + i)] = static_cast<T>(v);
    }
  }
  k_.CopyFromHost(params_.data(), host.data(), host.size() * sizeof(T));
}

template <typename T>
void Transformer<T>::ZeroGradients() {
  grads_.Zero();
}

template <typename T>
void Transformer<T>::ReserveBlock(BlockActs& a) {
  const ModelConfig& c = config_;
  int64_t n = batch_ * seq_, C = c.hidden, qd = c.heads * c.head_dim(), kvd = c.kv_heads * c.head_dim();
  a.ln1 = Alloc(n * C), a.mean1 = Alloc(n), a.rstd1 = Alloc(n);
  a.q = Alloc(n * qd), a.k = Alloc(n * kvd), a.v = Alloc(n * kvd);
  a.att = Alloc(batch_ * c.heads * seq_ * seq_), a.attn = Alloc(n * qd);
  a.x2 = Alloc(n * C), a.ln2 = Alloc(n * C), a.mean2 = Alloc(n), a.rstd2 = Alloc(n);
  a.h = Alloc(n * c.mlp_in_dim()), a.act = Alloc(n * c.ffn), a.out = Alloc(n * C);
}

// Everything a step touches is allocated here, once per shape, so the steps
// themselves allocate nothing.
template <typename T>
void Transformer<T>::Reserve(int64_t batch, int64_t seq) {
  if (batch == batch_ && seq == seq_) return;
  batch_ = batch, seq_ = seq;
  const ModelConfig& c = config_;
  int64_t n = batch * seq, C = c.hidden, qd = c.heads * c.head_dim(), kvd = c.kv_heads * c.head_dim();
  int64_t ffn_split = c.arch == Arch::Llama ? n * c.ffn : 0;
  tokens_ = Buffer<uint32_t>(k_, static_cast<size_t>(n));
  targets_ = Buffer<uint32_t>(k_, static_cast<size_t>(n));
  acts_.clear();
  acts_.resize(static_cast<size_t>(c.layers));
  for (BlockActs& a : acts_) ReserveBlock(a);
  Workspace& w = w_;
  w.qkv = Alloc(n * c.qkv_dim()), w.tmp = Alloc(n * C), w.gate = Alloc(ffn_split), w.up = Alloc(ffn_split);
  w.dx2 = Alloc(n * C), w.dmlp = Alloc(n * C), w.dact = Alloc(n * c.ffn), w.dh = Alloc(n * c.mlp_in_dim());
  w.dln2 = Alloc(n * C), w.dattn = Alloc(n * qd), w.dproj = Alloc(n * C);
  w.dq = Alloc(n * qd), w.dk = Alloc(n * kvd), w.dv = Alloc(n * kvd);
  w.dqkv = Alloc(n * c.qkv_dim()), w.dln1 = Alloc(n * C), w.dgate = Alloc(ffn_split), w.dup = Alloc(ffn_split);
  embedded_ = Alloc(n * C), lnf_ = Alloc(n * C), lnf_mean_ = Alloc(n), lnf_rstd_ = Alloc(n);
  logits_ = Alloc(n * c.vocab), probs_ = Alloc(n * c.vocab), losses_ = Alloc(n);
  dlosses_ = Alloc(n), dlnf_ = Alloc(n * C), dx_ = Alloc(n * C), dprev_ = Alloc(n * C);
  std::vector<T> mean_weights(static_cast<size_t>(n), static_cast<T>(1.0 / static_cast<double>(n)));
  k_.CopyFromHost(dlosses_.data(), mean_weights.data(), mean_weights.size() * sizeof(T));
}

template <typename T>
void Transformer<T>::CopyColumns(T* rows, int64_t row_width, int64_t col, T* dense, int64_t width, bool to_rows) {
  size_t e = sizeof(T), n = static_cast<size_t>(batch_ * seq_);
  size_t row_pitch = static_cast<size_t>(row_width) * e, dense_pitch = static_cast<size_t>(width) * e;
  if (to_rows) k_.Copy2D(rows + col, row_pitch, dense, dense_pitch, dense_pitch, n);
  else k_.Copy2D(dense, dense_pitch, rows + col, row_pitch, dense_pitch, n);
}

template <typename T>
void Transformer<T>::Norm(const T* in, int64_t w, int64_t b, T* out, T* mean, T* rstd) {
  int64_t n = batch_ * seq_, c = config_.hidden;
  if (config_.arch == Arch::Gpt2) k_.LayerNormForward(out, mean, rstd, in, P(w), P(b), n, c);
  else k_.RmsNormForward(out, rstd, in, P(w), n, c);
}

template <typename T>
void Transformer<T>::NormBackward(T* din, const T* dout, const T* in, int64_t w, int64_t b, const T* mean,
                                  const T* rstd) {
  int64_t n = batch_ * seq_, c = config_.hidden;
  if (config_.arch == Arch::Gpt2) k_.LayerNormBackward(din, G(w), G(b), dout, in, P(w), mean, rstd, n, c);
  else k_.RmsNormBackward(din, G(w), dout, in, P(w), rstd, n, c);
}

template <typename T>
void Transformer<T>::BlockForward(int64_t i, const T* x, BlockActs& a) {
  const ModelConfig& c = config_;
  const BlockParams& p = layout_.blocks[static_cast<size_t>(i)];
  int64_t n = batch_ * seq_, C = c.hidden, hd = c.head_dim(), qd = c.heads * hd, kvd = c.kv_heads * hd;
  a.in = x;
  Norm(x, p.ln1_w, p.ln1_b, a.ln1.data(), a.mean1.data(), a.rstd1.data());
  T* qkv = w_.qkv.data();
  k_.MatmulForward(qkv, a.ln1.data(), P(p.qkv_w), P(p.qkv_b), n, C, c.qkv_dim());
  CopyColumns(qkv, c.qkv_dim(), 0, a.q.data(), qd, false);
  CopyColumns(qkv, c.qkv_dim(), qd, a.k.data(), kvd, false);
  CopyColumns(qkv, c.qkv_dim(), qd + kvd, a.v.data(), kvd, false);
  if (c.arch == Arch::Llama) {
    k_.RopeForward(a.q.data(), batch_, seq_, c.heads, hd, c.rope_theta);
    k_.RopeForward(a.k.data(), batch_, seq_, c.kv_heads, hd, c.rope_theta);
  }
  k_.AttentionForward(a.attn.data(), a.att.data(), a.q.data(), a.k.data(), a.v.data(),
                      {batch_, seq_, c.heads, c.kv_heads, hd});
  k_.MatmulForward(w_.tmp.data(), a.attn.data(), P(p.proj_w), P(p.proj_b), n, qd, C);
  k_.ResidualForward(a.x2.data(), x, w_.tmp.data(), n * C);
  Norm(a.x2.data(), p.ln2_w, p.ln2_b, a.ln2.data(), a.mean2.data(), a.rstd2.data());
  MlpForward(p, a);
}

template <typename T>
void Transformer<T>::MlpForward(const BlockParams& p, BlockActs& a) {
  const ModelConfig& c = config_;
  int64_t n = batch_ * seq_, C = c.hidden;
  k_.MatmulForward(a.h.data(), a.ln2.data(), P(p.fc_w), P(p.fc_b), n, C, c.mlp_in_dim());
  if (c.arch == Arch::Gpt2) {
    k_.GeluForward(a.act.data(), a.h.data(), n * c.ffn);
  } else {
    CopyColumns(a.h.data(), 2 * c.ffn, 0, w_.gate.data(), c.ffn, false);
    CopyColumns(a.h.data(), 2 * c.ffn, c.ffn, w_.up.data(), c.ffn, false);
    k_.SwigluForward(a.act.data(), w_.gate.data(), w_.up.data(), n * c.ffn);
  }
  k_.MatmulForward(w_.tmp.data(), a.act.data(), P(p.fcproj_w), P(p.fcproj_b), n, c.ffn, C);
  k_.ResidualForward(a.out.data(), a.x2.data(), w_.tmp.data(), n * C);
}

template <typename T>
auto Transformer<T>::Forward(const uint32_t* tokens, const uint32_t* targets, int64_t batch, int64_t seq) -> double {
  const ModelConfig& c = config_;
  Reserve(batch, seq);
  int64_t n = batch * seq, C = c.hidden;
  k_.CopyFromHost(tokens_.data(), tokens, static_cast<size_t>(n) * sizeof(uint32_t));
  k_.CopyFromHost(targets_.data(), targets, static_cast<size_t>(n) * sizeof(uint32_t));
  k_.EmbeddingForward(embedded_.data(), tokens_.data(), P(layout_.wte), P(layout_.wpe), batch, seq, C);
  const T* x = embedded_.data();
  for (int64_t i = 0; i < c.layers; ++i) {
    BlockActs& a = acts_[static_cast<size_t>(i)];
    BlockForward(i, x, a);
    x = a.out.data();
  }
  Norm(x, layout_.lnf_w, layout_.lnf_b, lnf_.data(), lnf_mean_.data(), lnf_rstd_.data());
  int64_t head = layout_.lm_head < 0 ? layout_.wte : layout_.lm_head;
  k_.MatmulForward(logits_.data(), lnf_.data(), P(head), static_cast<const T*>(nullptr), n, C, c.vocab);
  k_.CrossEntropyForward(losses_.data(), probs_.data(), logits_.data(), targets_.data(), n, c.vocab);
  std::vector<T> losses(static_cast<size_t>(n));
  k_.CopyToHost(losses.data(), losses_.data(), losses.size() * sizeof(T));
  double sum = 0;
  for (T l : losses) sum += l;
  return sum / static_cast<double>(n);
}

template <typename T>
void Transformer<T>::MlpBackward(const BlockParams& p, BlockActs& a, const T* dmlp) {
  const ModelConfig& c = config_;
  int64_t n = batch_ * seq_, C = c.hidden;
  Workspace& w = w_;
  w.dact.Zero(), w.dh.Zero(), w.dln2.Zero();
  k_.MatmulBackward(w.dact.data(), G(p.fcproj_w), G(p.fcproj_b), dmlp, a.act.data(), P(p.fcproj_w), n, c.ffn, C);
  if (c.arch == Arch::Gpt2) {
    k_.GeluBackward(w.dh.data(), a.h.data(), w.dact.data(), n * c.ffn);
  } else {
    w.dgate.Zero(), w.dup.Zero();
    CopyColumns(a.h.data(), 2 * c.ffn, 0, w.gate.data(), c.ffn, false);
    CopyColumns(a.h.data(), 2 * c.ffn, c.ffn, w.up.data(), c.ffn, false);
    k_.SwigluBackward(w.dgate.data(), w.dup.data(), w.dact.data(), w.gate.data(), w.up.data(), n * c.ffn);
    CopyColumns(w.dh.data(), 2 * c.ffn, 0, w.dgate.data(), c.ffn, true);
    CopyColumns(w.dh.data(), 2 * c.ffn, c.ffn, w.dup.data(), c.ffn, true);
  }
  k_.MatmulBackward(w.dln2.data(), G(p.fc_w), G(p.fc_b), w.dh.data(), a.ln2.data(), P(p.fc_w), n, C, c.mlp_in_dim());
}

// From d(attention output) in w_.dattn to d(ln1) in w_.dln1.
template <typename T>
void Transformer<T>::AttentionBackward(const BlockParams& p, BlockActs& a) {
  const ModelConfig& c = config_;
  int64_t n = batch_ * seq_, C = c.hidden, hd = c.head_dim(), qd = c.heads * hd, kvd = c.kv_heads * hd;
  Workspace& w = w_;
  w.dq.Zero(), w.dk.Zero(), w.dv.Zero(), w.dln1.Zero();
  k_.AttentionBackward(w.dq.data(), w.dk.data(), w.dv.data(), w.dattn.data(), a.att.data(), a.q.data(), a.k.data(),
                       a.v.data(), {batch_, seq_, c.heads, c.kv_heads, hd});
  if (c.arch == Arch::Llama) {
    k_.RopeBackward(w.dq.data(), batch_, seq_, c.heads, hd, c.rope_theta);
    k_.RopeBackward(w.dk.data(), batch_, seq_, c.kv_heads, hd, c.rope_theta);
  }
  CopyColumns(w.dqkv.data(), c.qkv_dim(), 0, w.dq.data(), qd, true);
  CopyColumns(w.dqkv.data(), c.qkv_dim(), qd, w.dk.data(), kvd, true);
  CopyColumns(w.dqkv.data(), c.qkv_dim(), qd + kvd, w.dv.data(), kvd, true);
  k_.MatmulBackward(w.dln1.data(), G(p.qkv_w), G(p.qkv_b), w.dqkv.data(), a.ln1.data(), P(p.qkv_w), n, C,
                    c.qkv_dim());
}

// dx (zeroed by the caller) gets d(loss)/d(block input) from dout.
template <typename T>
void Transformer<T>::BlockBackward(int64_t i, BlockActs& a, const T* dout, T* dx) {
  const ModelConfig& c = config_;
  const BlockParams& p = layout_.blocks[static_cast<size_t>(i)];
  int64_t n = batch_ * seq_, C = c.hidden, qd = c.heads * c.head_dim();
  Workspace& w = w_;
  w.dx2.Zero(), w.dmlp.Zero();
  k_.ResidualBackward(w.dx2.data(), w.dmlp.data(), dout, n * C);
  MlpBackward(p, a, w.dmlp.data());
  NormBackward(w.dx2.data(), w.dln2.data(), a.x2.data(), p.ln2_w, p.ln2_b, a.mean2.data(), a.rstd2.data());
  w.dattn.Zero(), w.dproj.Zero();
  k_.ResidualBackward(dx, w.dproj.data(), w.dx2.data(), n * C);
  k_.MatmulBackward(w.dattn.data(), G(p.proj_w), G(p.proj_b), w.dproj.data(), a.attn.data(), P(p.proj_w), n, qd, C);
  AttentionBackward(p, a);
  NormBackward(dx, w.dln1.data(), a.in, p.ln1_w, p.ln1_b, a.mean1.data(), a.rstd1.data());
}

template <typename T>
void Transformer<T>::Backward() {
  const ModelConfig& c = config_;
  int64_t n = batch_ * seq_, C = c.hidden;
  // The logits are not needed after the loss: their buffer takes d(logits).
  T* dlogits = logits_.data();
  logits_.Zero(), dlnf_.Zero(), dx_.Zero();
  k_.CrossEntropyBackward(dlogits, probs_.data(), targets_.data(), dlosses_.data(), n, c.vocab);
  int64_t head = layout_.lm_head < 0 ? layout_.wte : layout_.lm_head;
  k_.MatmulBackward(dlnf_.data(), G(head), static_cast<T*>(nullptr), dlogits, lnf_.data(), P(head), n, C, c.vocab);
  const T* final_x = c.layers > 0 ? acts_.back().out.data() : embedded_.data();
  NormBackward(dx_.data(), dlnf_.data(), final_x, layout_.lnf_w, layout_.lnf_b, lnf_mean_.data(), lnf_rstd_.data());
  for (int64_t i = c.layers - 1; i >= 0; --i) {
    dprev_.Zero();
    BlockBackward(i, acts_[static_cast<size_t>(i)], dx_.data(), dprev_.data());
    dx_.swap(dprev_);
  }
  k_.EmbeddingBackward(G(layout_.wte), G(layout_.wpe), dx_.data(), tokens_.data(), batch_, seq_, C);
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace avf::model
