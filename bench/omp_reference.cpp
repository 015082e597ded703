// The llm.c-style OpenMP fp32 GPT-2 of bench/omp_reference.h. The kernels
// follow train_gpt2.c's loops (activations row-major: N = B x T rows of C
// channels; a linear layer's weight is OC x C); where they differ from it,
// the comment says how. Compiled with -O3 outside Debug builds
// (bench/CMakeLists.txt), never with -ffast-math or -march=native: the
// `omp simd` pragmas are what let GCC vectorise the float sums.
#include "omp_reference.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace avf::bench {

namespace {

constexpr int64_t kTile = 8;                       // llm.c's LOOP_UNROLL
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)

// ---- encoder (serial, as in llm.c) ----

void EncoderForward(float* out, const uint32_t* tokens, const float* wte, const float* wpe, int64_t b, int64_t t,
                    int64_t c) {
  for (int64_t bb = 0; bb < b; ++bb) {
    for (int64_t tt = 0; tt < t; ++tt) {
      float* o = out + (bb * t + tt) * c;
      const float* e = wte + static_cast<int64_t>(tokens[bb * t + tt]) * c;
      const float* p = wpe + tt * c;
      for (int64_t i = 0; i < c; ++i) o[i] = e[i] + p[i];
    }
  }
}

void EncoderBackward(float* dwte, float* dwpe, const float* dout, const uint32_t* tokens, int64_t b, int64_t t,
                     int64_t c) {
  for (int64_t bb = 0; bb < b; ++bb) {
    for (int64_t tt = 0; tt < t; ++tt) {
      const float* d = dout + (bb * t + tt) * c;
      float* de = dwte + static_cast<int64_t>(tokens[bb * t + tt]) * c;
      float* dp = dwpe + tt * c;
      for (int64_t i = 0; i < c; ++i) {
        de[i] += d[i];
        dp[i] += d[i];
      }
    }
  }
}

// ---- layernorm, eps 1e-5 (serial, as in llm.c) ----

void LayerNormForward(float* out, float* mean, float* rstd, const float* in, const float* w, const float* bias,
                      int64_t n, int64_t c) {
  for (int64_t r = 0; r < n; ++r) {
    const float* x = in + r * c;
    float m = 0.0f;
    for (int64_t i = 0; i < c; ++i) m += x[i];
    m /= static_cast<float>(c);
    float v = 0.0f;
    for (int64_t i = 0; i < c; ++i) v += (x[i] - m) * (x[i] - m);
    v /= static_cast<float>(c);
    float s = 1.0f / std::sqrt(v + 1e-5f);
    float* o = out + r * c;
    for (int64_t i = 0; i < c; ++i) o[i] = s * (x[i] - m) * w[i] + bias[i];
    mean[r] = m;
    rstd[r] = s;
  }
}

void LayerNormBackward(float* din, float* dw, float* db, const float* dout, const float* in, const float* w,
                       const float* mean, const float* rstd, int64_t n, int64_t c) {
  for (int64_t r = 0; r < n; ++r) {
    const float* x = in + r * c;
    const float* dy = dout + r * c;
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int64_t i = 0; i < c; ++i) {
      float norm = (x[i] - mean[r]) * rstd[r];
      dnorm_mean += w[i] * dy[i];
      dnorm_norm_mean += w[i] * dy[i] * norm;
    }
    dnorm_mean /= static_cast<float>(c);
    dnorm_norm_mean /= static_cast<float>(c);
    for (int64_t i = 0; i < c; ++i) {
      float norm = (x[i] - mean[r]) * rstd[r];
      db[i] += dy[i];
      dw[i] += norm * dy[i];
      din[r * c + i] += (w[i] * dy[i] - dnorm_mean - norm * dnorm_norm_mean) * rstd[r];
    }
  }
}

// ---- matmul (OpenMP, as in llm.c) ----

auto Dot(const float* a, const float* b, int64_t n) -> float {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// r[k] = x_k . w for the kTile rows x_k = x + k c. Each w[i] is loaded once
// for the 8 rows (llm.c's LOOP_UNROLL tiling of matmul_forward); `omp simd
// reduction` lets GCC vectorise the sums over i, which llm.c gets from -Ofast.
void DotTile(float* r, const float* x, int64_t c, const float* w) {
  const float *x0 = x, *x1 = x + c, *x2 = x + 2 * c, *x3 = x + 3 * c;
  const float *x4 = x + 4 * c, *x5 = x + 5 * c, *x6 = x + 6 * c, *x7 = x + 7 * c;
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3, s4, s5, s6, s7)
  for (int64_t i = 0; i < c; ++i) {
    float wi = w[i];
    s0 += x0[i] * wi, s1 += x1[i] * wi, s2 += x2[i] * wi, s3 += x3[i] * wi;
    s4 += x4[i] * wi, s5 += x5[i] * wi, s6 += x6[i] * wi, s7 += x7[i] * wi;
  }
  r[0] = s0, r[1] = s1, r[2] = s2, r[3] = s3, r[4] = s4, r[5] = s5, r[6] = s6, r[7] = s7;
}

// out(N x OC) = in(N x C) . weight(OC x C)^T + bias (bias may be null).
// OpenMP over tiles of 8 rows (the (b, t) positions), as llm.c.
void MatmulForward(float* out, const float* in, const float* weight, const float* bias, int64_t n, int64_t c,
                   int64_t oc) {
  int64_t tiles = (n + kTile - 1) / kTile;
#pragma omp parallel for schedule(static)
  for (int64_t tile = 0; tile < tiles; ++tile) {
    int64_t r0 = tile * kTile, rows = std::min(kTile, n - r0);
    float r[kTile];
    for (int64_t o = 0; o < oc; ++o) {
      const float* w = weight + o * c;
      if (rows == kTile) DotTile(r, in + r0 * c, c, w);
      else
        for (int64_t k = 0; k < rows; ++k) r[k] = Dot(in + (r0 + k) * c, w, c);
      float b = bias ? bias[o] : 0.0f;
      for (int64_t k = 0; k < rows; ++k) out[(r0 + k) * oc + o] = r[k] + b;
    }
  }
}

// din += dout . weight. OpenMP over tiles of 8 rows, like llm.c's loop over
// (b, t); a weight row is added into the tile's 8 rows while it is in L1
// (llm.c goes row by row, reading the whole weight once per row).
void MatmulBackwardInput(float* din, const float* dout, const float* weight, int64_t n, int64_t c, int64_t oc) {
  int64_t tiles = (n + kTile - 1) / kTile;
#pragma omp parallel for schedule(static)
  for (int64_t tile = 0; tile < tiles; ++tile) {
    int64_t r0 = tile * kTile, rows = std::min(kTile, n - r0);
    for (int64_t o = 0; o < oc; ++o) {
      const float* w = weight + o * c;
      for (int64_t k = 0; k < rows; ++k) {
        float d = dout[(r0 + k) * oc + o];
        float* dx = din + (r0 + k) * c;
#pragma omp simd
        for (int64_t i = 0; i < c; ++i) dx[i] += w[i] * d;
      }
    }
  }
}

// dweight += dout^T . in, dbias += column sums of dout. OpenMP over output
// channels, as llm.c, here in tiles of 8 so that an input row is read once
// per tile (llm.c: once per channel).
void MatmulBackwardWeight(float* dweight, float* dbias, const float* dout, const float* in, int64_t n, int64_t c,
                          int64_t oc) {
  int64_t tiles = (oc + kTile - 1) / kTile;
#pragma omp parallel for schedule(static)
  for (int64_t tile = 0; tile < tiles; ++tile) {
    int64_t o0 = tile * kTile, outs = std::min(kTile, oc - o0);
    for (int64_t r = 0; r < n; ++r) {
      const float* x = in + r * c;
      for (int64_t k = 0; k < outs; ++k) {
        float d = dout[r * oc + o0 + k];
        float* dw = dweight + (o0 + k) * c;
        if (dbias) dbias[o0 + k] += d;
#pragma omp simd
        for (int64_t i = 0; i < c; ++i) dw[i] += x[i] * d;
      }
    }
  }
}

void MatmulBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight,
                    int64_t n, int64_t c, int64_t oc) {
  MatmulBackwardInput(din, dout, weight, n, c, oc);
  MatmulBackwardWeight(dweight, dbias, dout, in, n, c, oc);
}

// ---- causal self-attention on qkv (B, T, 3C) = [q | k | v], each (NH, hs) ----

struct Heads {
  int64_t b, t, c, nh;
  auto hs() const -> int64_t { return c / nh; }
  // Offset of head h of part 0 (q), 1 (k) or 2 (v) at (bb, pos) in qkv.
  auto At(int64_t bb, int64_t pos, int64_t part, int64_t h) const -> int64_t {
    return (bb * t + pos) * 3 * c + part * c + h * hs();
  }
  auto Out(int64_t bb, int64_t pos, int64_t h) const -> int64_t { return (bb * t + pos) * c + h * hs(); }
  auto Row(int64_t bb, int64_t h, int64_t pos) const -> int64_t { return ((bb * nh + h) * t + pos) * t; }
};

// att (B, NH, T, T) keeps the probabilities (0 above the diagonal), out is
// (B, T, C). OpenMP over (b, t, h), as llm.c; one query row's T^2 loops.
void AttentionForward(float* out, float* att, const float* qkv, const Heads& s) {
  int64_t hs = s.hs();
  float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(3)
  for (int64_t b = 0; b < s.b; ++b) {
    for (int64_t t = 0; t < s.t; ++t) {
      for (int64_t h = 0; h < s.nh; ++h) {
        const float* q = qkv + s.At(b, t, 0, h);
        float* row = att + s.Row(b, h, t);
        float max = -INFINITY, sum = 0.0f;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          row[t2] = scale * Dot(q, qkv + s.At(b, t2, 1, h), hs);
          max = std::max(max, row[t2]);
        }
        for (int64_t t2 = 0; t2 <= t; ++t2) sum += row[t2] = std::exp(row[t2] - max);
        for (int64_t t2 = 0; t2 < s.t; ++t2) row[t2] = t2 <= t ? row[t2] / sum : 0.0f;
        float* o = out + s.Out(b, t, h);
        std::fill(o, o + hs, 0.0f);
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + s.At(b, t2, 2, h);
          float p = row[t2];
#pragma omp simd
          for (int64_t i = 0; i < hs; ++i) o[i] += p * v[i];
        }
      }
    }
  }
}

// Adds the gradient of AttentionForward into dqkv. llm.c runs this serially
// (threads over (b, t, h) would race on dk and dv); here OpenMP runs over
// (b, h), whose columns of dqkv are disjoint. The softmax backward is the
// O(T) form per row, att (datt - sum att datt), not llm.c's O(T^2) Jacobian
// loop: the same math.
void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att, const Heads& s) {
  int64_t hs = s.hs();
  float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < s.b; ++b) {
    for (int64_t h = 0; h < s.nh; ++h) {
      std::vector<float> datt(static_cast<size_t>(s.t));
      for (int64_t t = 0; t < s.t; ++t) {
        const float* row = att + s.Row(b, h, t);
        const float* dy = dout + s.Out(b, t, h);
        float weighted = 0.0f;
        for (int64_t t2 = 0; t2 <= t; ++t2) {  // through the weighted sum of the values
          float* dv = dqkv + s.At(b, t2, 2, h);
          datt[t2] = Dot(qkv + s.At(b, t2, 2, h), dy, hs);
          weighted += row[t2] * datt[t2];
#pragma omp simd
          for (int64_t i = 0; i < hs; ++i) dv[i] += row[t2] * dy[i];
        }
        const float* q = qkv + s.At(b, t, 0, h);
        float* dq = dqkv + s.At(b, t, 0, h);
        for (int64_t t2 = 0; t2 <= t; ++t2) {  // through the softmax and the scaled q . k
          float dscore = row[t2] * (datt[t2] - weighted) * scale;
          const float* k = qkv + s.At(b, t2, 1, h);
          float* dk = dqkv + s.At(b, t2, 1, h);
#pragma omp simd
          for (int64_t i = 0; i < hs; ++i) {
            dq[i] += k[i] * dscore;
            dk[i] += q[i] * dscore;
          }
        }
      }
    }
  }
}

// ---- GELU (tanh), residual (serial, as in llm.c) ----

void GeluForward(float* out, const float* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float x = in[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + 0.044715f * x * x * x)));
  }
}

void GeluBackward(float* din, const float* in, const float* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float x = in[i];
    float arg = kGeluScale * (x + 0.044715f * x * x * x);
    float th = std::tanh(arg), ch = std::cosh(arg);
    float grad = 0.5f * (1.0f + th) + x * 0.5f / (ch * ch) * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    din[i] += grad * dout[i];
  }
}

void ResidualForward(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void ResidualBackward(float* da, float* db, const float* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

// ---- softmax (OpenMP, as in llm.c) and cross-entropy (serial) ----

// logits (N x V) become their softmax, in place.
void SoftmaxForward(float* logits, int64_t n, int64_t v) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    float* z = logits + r * v;
    float max = *std::max_element(z, z + v), sum = 0.0f;
    for (int64_t j = 0; j < v; ++j) sum += z[j] = std::exp(z[j] - max);
    for (int64_t j = 0; j < v; ++j) z[j] /= sum;
  }
}

void CrossEntropyForward(float* losses, const float* probs, const uint32_t* targets, int64_t n, int64_t v) {
  for (int64_t r = 0; r < n; ++r) losses[r] = -std::log(probs[r * v + targets[r]]);
}

// probs (N x V) become dlogits = (probs - onehot(target)) x dloss, in place.
void CrossEntropySoftmaxBackward(float* probs, const uint32_t* targets, const float* dlosses, int64_t n, int64_t v) {
  for (int64_t r = 0; r < n; ++r) {
    float* p = probs + r * v;
    for (int64_t j = 0; j < v; ++j) p[j] = (p[j] - (j == static_cast<int64_t>(targets[r]) ? 1.0f : 0.0f)) * dlosses[r];
  }
}

// Sizes v to s elements; every forward kernel writes its whole output.
void Size(std::vector<float>& v, int64_t s) { v.resize(static_cast<size_t>(s)); }

auto Zeros(int64_t s) -> std::vector<float> { return std::vector<float>(static_cast<size_t>(s), 0.0f); }

}  // namespace

OmpGpt2::OmpGpt2(const model::ModelConfig& config) : config_(config), layout_(model::LayoutOf(config)) {
  if (config.arch != model::Arch::Gpt2 || !config.tied_embeddings || config.heads != config.kv_heads ||
      config.hidden % config.heads != 0) {
    throw std::invalid_argument("OmpGpt2: GPT-2 with tied embeddings and heads == kv_heads dividing hidden only");
  }
  grads_.assign(static_cast<size_t>(layout_.total), 0.0f);
}

auto OmpGpt2::Threads() -> int { return omp_get_max_threads(); }

void OmpGpt2::ZeroGradients() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

void OmpGpt2::BlockForward(const float* params, int64_t l, const float* in, Block& a) {
  const model::BlockParams& p = layout_.blocks[static_cast<size_t>(l)];
  int64_t n = batch_ * seq_, C = config_.hidden, F = config_.ffn;
  Size(a.ln1, n * C), Size(a.mean1, n), Size(a.rstd1, n), Size(a.qkv, 3 * n * C);
  Size(a.att, batch_ * config_.heads * seq_ * seq_), Size(a.atty, n * C), Size(a.x2, n * C), Size(a.ln2, n * C);
  Size(a.mean2, n), Size(a.rstd2, n), Size(a.fch, n * F), Size(a.fch_gelu, n * F), Size(a.out, n * C);
  std::vector<float> tmp(static_cast<size_t>(n * C));
  LayerNormForward(a.ln1.data(), a.mean1.data(), a.rstd1.data(), in, params + p.ln1_w, params + p.ln1_b, n, C);
  MatmulForward(a.qkv.data(), a.ln1.data(), params + p.qkv_w, params + p.qkv_b, n, C, 3 * C);
  AttentionForward(a.atty.data(), a.att.data(), a.qkv.data(), Heads{batch_, seq_, C, config_.heads});
  MatmulForward(tmp.data(), a.atty.data(), params + p.proj_w, params + p.proj_b, n, C, C);
  ResidualForward(a.x2.data(), in, tmp.data(), n * C);
  LayerNormForward(a.ln2.data(), a.mean2.data(), a.rstd2.data(), a.x2.data(), params + p.ln2_w, params + p.ln2_b, n, C);
  MatmulForward(a.fch.data(), a.ln2.data(), params + p.fc_w, params + p.fc_b, n, C, F);
  GeluForward(a.fch_gelu.data(), a.fch.data(), n * F);
  MatmulForward(tmp.data(), a.fch_gelu.data(), params + p.fcproj_w, params + p.fcproj_b, n, F, C);
  ResidualForward(a.out.data(), a.x2.data(), tmp.data(), n * C);
}

auto OmpGpt2::Forward(const float* params, const uint32_t* tokens, const uint32_t* targets, int64_t batch, int64_t seq)
    -> double {
  batch_ = batch;
  seq_ = seq;
  int64_t n = batch * seq, C = config_.hidden, V = config_.vocab;
  tokens_.assign(tokens, tokens + n);
  targets_.assign(targets, targets + n);
  Size(x0_, n * C);
  EncoderForward(x0_.data(), tokens, params + layout_.wte, params + layout_.wpe, batch, seq, C);
  blocks_.resize(static_cast<size_t>(config_.layers));
  const float* x = x0_.data();
  for (int64_t l = 0; l < config_.layers; ++l) {
    BlockForward(params, l, x, blocks_[static_cast<size_t>(l)]);
    x = blocks_[static_cast<size_t>(l)].out.data();
  }
  Size(lnf_, n * C), Size(lnf_mean_, n), Size(lnf_rstd_, n), Size(probs_, n * V), Size(losses_, n);
  LayerNormForward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), x, params + layout_.lnf_w, params + layout_.lnf_b,
                   n, C);
  MatmulForward(probs_.data(), lnf_.data(), params + layout_.wte, nullptr, n, C, V);  // tied LM head
  SoftmaxForward(probs_.data(), n, V);
  CrossEntropyForward(losses_.data(), probs_.data(), targets, n, V);
  double sum = 0;
  for (float loss : losses_) sum += loss;
  return sum / static_cast<double>(n);
}

void OmpGpt2::BlockBackward(const float* params, int64_t l, const float* in, Block& a, const float* dout, float* din) {
  const model::BlockParams& p = layout_.blocks[static_cast<size_t>(l)];
  int64_t n = batch_ * seq_, C = config_.hidden, F = config_.ffn;
  float* g = grads_.data();
  std::vector<float> dx2 = Zeros(n * C), dfcproj = Zeros(n * C), dfch_gelu = Zeros(n * F), dfch = Zeros(n * F);
  std::vector<float> dln2 = Zeros(n * C), dattproj = Zeros(n * C), datty = Zeros(n * C), dqkv = Zeros(3 * n * C);
  std::vector<float> dln1 = Zeros(n * C);
  ResidualBackward(dx2.data(), dfcproj.data(), dout, n * C);
  MatmulBackward(dfch_gelu.data(), g + p.fcproj_w, g + p.fcproj_b, dfcproj.data(), a.fch_gelu.data(),
                 params + p.fcproj_w, n, F, C);
  GeluBackward(dfch.data(), a.fch.data(), dfch_gelu.data(), n * F);
  MatmulBackward(dln2.data(), g + p.fc_w, g + p.fc_b, dfch.data(), a.ln2.data(), params + p.fc_w, n, C, F);
  LayerNormBackward(dx2.data(), g + p.ln2_w, g + p.ln2_b, dln2.data(), a.x2.data(), params + p.ln2_w, a.mean2.data(),
                    a.rstd2.data(), n, C);
  ResidualBackward(din, dattproj.data(), dx2.data(), n * C);
  MatmulBackward(datty.data(), g + p.proj_w, g + p.proj_b, dattproj.data(), a.atty.data(), params + p.proj_w, n, C, C);
  AttentionBackward(dqkv.data(), datty.data(), a.qkv.data(), a.att.data(), Heads{batch_, seq_, C, config_.heads});
  MatmulBackward(dln1.data(), g + p.qkv_w, g + p.qkv_b, dqkv.data(), a.ln1.data(), params + p.qkv_w, n, C, 3 * C);
  LayerNormBackward(din, g + p.ln1_w, g + p.ln1_b, dln1.data(), in, params + p.ln1_w, a.mean1.data(), a.rstd1.data(), n,
                    C);
}

// One Backward per Forward: it turns the kept probabilities into dlogits in place.
void OmpGpt2::Backward(const float* params) {
  int64_t n = batch_ * seq_, C = config_.hidden, V = config_.vocab;
  float* g = grads_.data();
  std::vector<float> dlosses(static_cast<size_t>(n), 1.0f / static_cast<float>(n));
  CrossEntropySoftmaxBackward(probs_.data(), targets_.data(), dlosses.data(), n, V);
  std::vector<float> dlnf = Zeros(n * C), dx = Zeros(n * C);
  MatmulBackward(dlnf.data(), g + layout_.wte, nullptr, probs_.data(), lnf_.data(), params + layout_.wte, n, C, V);
  const float* last = config_.layers > 0 ? blocks_.back().out.data() : x0_.data();
  LayerNormBackward(dx.data(), g + layout_.lnf_w, g + layout_.lnf_b, dlnf.data(), last, params + layout_.lnf_w,
                    lnf_mean_.data(), lnf_rstd_.data(), n, C);
  for (int64_t l = config_.layers - 1; l >= 0; --l) {
    std::vector<float> din = Zeros(n * C);
    const float* in = l == 0 ? x0_.data() : blocks_[static_cast<size_t>(l - 1)].out.data();
    BlockBackward(params, l, in, blocks_[static_cast<size_t>(l)], dx.data(), din.data());
    dx.swap(din);
  }
  EncoderBackward(g + layout_.wte, g + layout_.wpe, dx.data(), tokens_.data(), batch_, seq_, C);
}

}  // namespace avf::bench
