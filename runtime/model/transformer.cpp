#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "cpu/kernels.h"

namespace avf::model {

namespace {

using namespace avf::cpu;

// Splits rows of [a | b | c] (widths wa, wb, wc) into three buffers, or joins them back.
template <typename T>
void Split3(const T* rows, int64_t n, int64_t wa, int64_t wb, int64_t wc, T* a, T* b, T* c) {
  int64_t w = wa + wb + wc;
  for (int64_t i = 0; i < n; ++i) {
    std::copy_n(rows + i * w, wa, a + i * wa);
    std::copy_n(rows + i * w + wa, wb, b + i * wb);
    if (c) std::copy_n(rows + i * w + wa + wb, wc, c + i * wc);
  }
}

template <typename T>
void Join3(T* rows, int64_t n, int64_t wa, int64_t wb, int64_t wc, const T* a, const T* b, const T* c) {
  int64_t w = wa + wb + wc;
  for (int64_t i = 0; i < n; ++i) {
    std::copy_n(a + i * wa, wa, rows + i * w);
    std::copy_n(b + i * wb, wb, rows + i * w + wa);
    if (c) std::copy_n(c + i * wc, wc, rows + i * w + wa + wb);
  }
}

// Box-Muller on mt19937 bits: std::normal_distribution differs between
// standard libraries, this does not.
auto Normal(std::mt19937_64& gen) -> double {
  constexpr double kScale = 1.0 / 9007199254740992.0;  // 2^-53
  double u1 = (static_cast<double>(gen() >> 11) + 1.0) * kScale;
  double u2 = static_cast<double>(gen() >> 11) * kScale;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

template <typename T>
Transformer<T>::Transformer(ModelConfig config) : config_(config), layout_(LayoutOf(config)) {
  params_.assign(static_cast<size_t>(layout_.total), T(0));
  grads_.assign(static_cast<size_t>(layout_.total), T(0));
}

template <typename T>
void Transformer<T>::Initialize(uint64_t seed) {
  std::mt19937_64 gen(seed);
  double residual_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(config_.layers));
  for (const ParamTensor& t : layout_.tensors) {
    bool norm = t.name.find("ln_") != std::string::npos;
    bool bias = t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0;
    bool residual = t.name.find("attn.proj.weight") != std::string::npos ||
                    t.name.find("mlp.proj.weight") != std::string::npos || t.name.find("mlp.down.weight") != std::string::npos;
    for (int64_t i = 0; i < t.size; ++i) {
      double v = bias ? 0.0 : norm ? 1.0 : 0.02 * Normal(gen) * (residual ? residual_scale : 1.0);
      params_[static_cast<size_t>(t.offset + i)] = static_cast<T>(v);
    }
  }
}

template <typename T>
void Transformer<T>::ZeroGradients() {
  std::fill(grads_.begin(), grads_.end(), T(0));
}

template <typename T>
void Transformer<T>::Norm(const T* in, int64_t w, int64_t b, T* out, T* mean, T* rstd) {
  int64_t n = batch_ * seq_, c = config_.hidden;
  if (config_.arch == Arch::Gpt2) LayerNormForward(out, mean, rstd, in, P(w), P(b), n, c);
  else RmsNormForward(out, rstd, in, P(w), n, c);
}

template <typename T>
void Transformer<T>::NormBackward(T* din, const T* dout, const T* in, int64_t w, int64_t b, const T* mean,
                                  const T* rstd) {
  int64_t n = batch_ * seq_, c = config_.hidden;
  if (config_.arch == Arch::Gpt2) LayerNormBackward(din, G(w), G(b), dout, in, P(w), mean, rstd, n, c);
  else RmsNormBackward(din, G(w), dout, in, P(w), rstd, n, c);
}

template <typename T>
void Transformer<T>::BlockForward(int64_t i, const T* x, BlockActs& a) {
  const ModelConfig& c = config_;
  const BlockParams& p = layout_.blocks[static_cast<size_t>(i)];
  int64_t n = batch_ * seq_, C = c.hidden, hd = c.head_dim(), qd = c.heads * hd, kvd = c.kv_heads * hd;
  auto size = [](std::vector<T>& v, int64_t s) { v.assign(static_cast<size_t>(s), T(0)); };
  a.in.assign(x, x + n * C);
  size(a.ln1, n * C), size(a.mean1, n), size(a.rstd1, n), size(a.q, n * qd), size(a.k, n * kvd), size(a.v, n * kvd);
  size(a.att, batch_ * c.heads * seq_ * seq_), size(a.attn, n * qd), size(a.x2, n * C), size(a.ln2, n * C);
  size(a.mean2, n), size(a.rstd2, n), size(a.h, n * c.mlp_in_dim()), size(a.act, n * c.ffn), size(a.out, n * C);
  Norm(x, p.ln1_w, p.ln1_b, a.ln1.data(), a.mean1.data(), a.rstd1.data());
  std::vector<T> qkv(static_cast<size_t>(n * c.qkv_dim())), tmp(static_cast<size_t>(n * C));
  MatmulForward(qkv.data(), a.ln1.data(), P(p.qkv_w), P(p.qkv_b), n, C, c.qkv_dim());
  Split3(qkv.data(), n, qd, kvd, kvd, a.q.data(), a.k.data(), a.v.data());
  if (c.arch == Arch::Llama) {
    RopeForward(a.q.data(), batch_, seq_, c.heads, hd, c.rope_theta);
    RopeForward(a.k.data(), batch_, seq_, c.kv_heads, hd, c.rope_theta);
  }
  AttentionForward(a.attn.data(), a.att.data(), a.q.data(), a.k.data(), a.v.data(),
                   AttentionShape{batch_, seq_, c.heads, c.kv_heads, hd});
  MatmulForward(tmp.data(), a.attn.data(), P(p.proj_w), P(p.proj_b), n, qd, C);
  ResidualForward(a.x2.data(), x, tmp.data(), n * C);
  Norm(a.x2.data(), p.ln2_w, p.ln2_b, a.ln2.data(), a.mean2.data(), a.rstd2.data());
  MatmulForward(a.h.data(), a.ln2.data(), P(p.fc_w), P(p.fc_b), n, C, c.mlp_in_dim());
  if (c.arch == Arch::Gpt2) {
    GeluForward(a.act.data(), a.h.data(), n * c.ffn);
  } else {
    std::vector<T> gate(static_cast<size_t>(n * c.ffn)), up(static_cast<size_t>(n * c.ffn));
    Split3<T>(a.h.data(), n, c.ffn, c.ffn, 0, gate.data(), up.data(), nullptr);
    SwigluForward(a.act.data(), gate.data(), up.data(), n * c.ffn);
  }
  MatmulForward(tmp.data(), a.act.data(), P(p.fcproj_w), P(p.fcproj_b), n, c.ffn, C);
  ResidualForward(a.out.data(), a.x2.data(), tmp.data(), n * C);
}

template <typename T>
auto Transformer<T>::Forward(const uint32_t* tokens, const uint32_t* targets, int64_t batch, int64_t seq) -> double {
  const ModelConfig& c = config_;
  batch_ = batch;
  seq_ = seq;
  int64_t n = batch * seq, C = c.hidden;
  tokens_.assign(tokens, tokens + n);
  targets_.assign(targets, targets + n);
  std::vector<T> x(static_cast<size_t>(n * C));
  EmbeddingForward(x.data(), tokens, P(layout_.wte), P(layout_.wpe), batch, seq, C);
  acts_.resize(static_cast<size_t>(c.layers));
  for (int64_t i = 0; i < c.layers; ++i) {
    BlockForward(i, i == 0 ? x.data() : acts_[static_cast<size_t>(i - 1)].out.data(), acts_[static_cast<size_t>(i)]);
  }
  x_final_ = c.layers > 0 ? acts_.back().out : x;
  lnf_.assign(static_cast<size_t>(n * C), T(0));
  lnf_mean_.assign(static_cast<size_t>(n), T(0));
  lnf_rstd_.assign(static_cast<size_t>(n), T(0));
  Norm(x_final_.data(), layout_.lnf_w, layout_.lnf_b, lnf_.data(), lnf_mean_.data(), lnf_rstd_.data());
  std::vector<T> logits(static_cast<size_t>(n * c.vocab));
  int64_t head = layout_.lm_head < 0 ? layout_.wte : layout_.lm_head;
  MatmulForward(logits.data(), lnf_.data(), P(head), static_cast<const T*>(nullptr), n, C, c.vocab);
  logits_probs_.assign(logits.size(), T(0));
  losses_.assign(static_cast<size_t>(n), T(0));
  CrossEntropyForward(losses_.data(), logits_probs_.data(), logits.data(), targets, n, c.vocab);
  double sum = 0;
  for (T l : losses_) sum += l;
  return sum / static_cast<double>(n);
}

template <typename T>
void Transformer<T>::BlockBackward(int64_t i, BlockActs& a, const T* dout, T* dx) {
  const ModelConfig& c = config_;
  const BlockParams& p = layout_.blocks[static_cast<size_t>(i)];
  int64_t n = batch_ * seq_, C = c.hidden, hd = c.head_dim(), qd = c.heads * hd, kvd = c.kv_heads * hd;
  std::vector<T> dx2(static_cast<size_t>(n * C)), dmlp(static_cast<size_t>(n * C)), dact(a.act.size());
  ResidualBackward(dx2.data(), dmlp.data(), dout, n * C);
  MatmulBackward(dact.data(), G(p.fcproj_w), G(p.fcproj_b), dmlp.data(), a.act.data(), P(p.fcproj_w), n, c.ffn, C);
  std::vector<T> dh(a.h.size()), dln2(static_cast<size_t>(n * C));
  if (c.arch == Arch::Gpt2) {
    GeluBackward(dh.data(), a.h.data(), dact.data(), n * c.ffn);
  } else {
    std::vector<T> gate(dact.size()), up(dact.size()), dgate(dact.size()), dup(dact.size());
    Split3<T>(a.h.data(), n, c.ffn, c.ffn, 0, gate.data(), up.data(), nullptr);
    SwigluBackward(dgate.data(), dup.data(), dact.data(), gate.data(), up.data(), n * c.ffn);
    Join3<T>(dh.data(), n, c.ffn, c.ffn, 0, dgate.data(), dup.data(), nullptr);
  }
  MatmulBackward(dln2.data(), G(p.fc_w), G(p.fc_b), dh.data(), a.ln2.data(), P(p.fc_w), n, C, c.mlp_in_dim());
  NormBackward(dx2.data(), dln2.data(), a.x2.data(), p.ln2_w, p.ln2_b, a.mean2.data(), a.rstd2.data());
  std::vector<T> dattn(a.attn.size()), dproj(static_cast<size_t>(n * C));
  ResidualBackward(dx, dproj.data(), dx2.data(), n * C);
  MatmulBackward(dattn.data(), G(p.proj_w), G(p.proj_b), dproj.data(), a.attn.data(), P(p.proj_w), n, qd, C);
  std::vector<T> dq(a.q.size()), dk(a.k.size()), dv(a.v.size());
  AttentionBackward(dq.data(), dk.data(), dv.data(), dattn.data(), a.att.data(), a.q.data(), a.k.data(), a.v.data(),
                    AttentionShape{batch_, seq_, c.heads, c.kv_heads, hd});
  if (c.arch == Arch::Llama) {
    RopeBackward(dq.data(), batch_, seq_, c.heads, hd, c.rope_theta);
    RopeBackward(dk.data(), batch_, seq_, c.kv_heads, hd, c.rope_theta);
  }
  std::vector<T> dqkv(static_cast<size_t>(n * c.qkv_dim())), dln1(static_cast<size_t>(n * C));
  Join3(dqkv.data(), n, qd, kvd, kvd, dq.data(), dk.data(), dv.data());
  MatmulBackward(dln1.data(), G(p.qkv_w), G(p.qkv_b), dqkv.data(), a.ln1.data(), P(p.qkv_w), n, C, c.qkv_dim());
  NormBackward(dx, dln1.data(), a.in.data(), p.ln1_w, p.ln1_b, a.mean1.data(), a.rstd1.data());
}

template <typename T>
void Transformer<T>::Backward() {
  const ModelConfig& c = config_;
  int64_t n = batch_ * seq_, C = c.hidden;
  std::vector<T> dlosses(static_cast<size_t>(n), static_cast<T>(1.0 / static_cast<double>(n)));
  std::vector<T> dlogits(logits_probs_.size()), dlnf(static_cast<size_t>(n * C)), dx(static_cast<size_t>(n * C));
  CrossEntropyBackward(dlogits.data(), logits_probs_.data(), targets_.data(), dlosses.data(), n, c.vocab);
  int64_t head = layout_.lm_head < 0 ? layout_.wte : layout_.lm_head;
  MatmulBackward(dlnf.data(), G(head), static_cast<T*>(nullptr), dlogits.data(), lnf_.data(), P(head), n, C, c.vocab);
  NormBackward(dx.data(), dlnf.data(), x_final_.data(), layout_.lnf_w, layout_.lnf_b, lnf_mean_.data(),
               lnf_rstd_.data());
  for (int64_t i = c.layers - 1; i >= 0; --i) {
    std::vector<T> dprev(static_cast<size_t>(n * C));
    BlockBackward(i, acts_[static_cast<size_t>(i)], dx.data(), dprev.data());
    dx.swap(dprev);
  }
  EmbeddingBackward(G(layout_.wte), G(layout_.wpe), dx.data(), tokens_.data(), batch_, seq_, C);
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace avf::model
