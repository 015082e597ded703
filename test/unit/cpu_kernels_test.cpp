// Every CPU kernel's backward against central finite differences of its
// forward, in fp64: the loss is sum(out * R) for a fixed random R, so the
// analytic gradient is backward(dout = R). Forwards are checked against
// direct formulas, and float against double.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "cpu/kernels.h"

namespace avf::cpu {
namespace {

using Vec = std::vector<double>;

auto Random(size_t n, uint32_t seed, double scale = 1.0) -> Vec {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d(0.0, scale);
  Vec v(n);
  for (double& x : v) x = d(gen);
  return v;
}

auto DotAll(const Vec& a, const Vec& b) -> double {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Compares `analytic` with the central difference of `loss` in every element of `x`.
void ExpectGradient(Vec& x, const Vec& analytic, const std::function<double()>& loss, const char* what,
                    double tol = 1e-6) {
  ASSERT_EQ(x.size(), analytic.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i], h = 1e-6 * std::max(1.0, std::abs(saved));
    x[i] = saved + h;
    double up = loss();
    x[i] = saved - h;
    double down = loss();
    x[i] = saved;
    double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic[i], numeric, tol * std::max(1.0, std::abs(numeric))) << what << "[" << i << "]";
  }
}

TEST(CpuKernels, Matmul) {
  const int64_t n = 5, c = 7, oc = 4;
  Vec in = Random(n * c, 1), w = Random(oc * c, 2), b = Random(oc, 3), r = Random(n * oc, 4), out(n * oc);
  auto loss = [&] {
    MatmulForward(out.data(), in.data(), w.data(), b.data(), n, c, oc);
    return DotAll(out, r);
  };
  loss();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o = 0; o < oc; ++o) {
      double want = b[o];
      for (int64_t k = 0; k < c; ++k) want += in[i * c + k] * w[o * c + k];
      EXPECT_NEAR(out[i * oc + o], want, 1e-12);
    }
  }
  Vec din(n * c), dw(oc * c), db(oc);
  MatmulBackward(din.data(), dw.data(), db.data(), r.data(), in.data(), w.data(), n, c, oc);
  ExpectGradient(in, din, loss, "din");
  ExpectGradient(w, dw, loss, "dweight");
  ExpectGradient(b, db, loss, "dbias");
  // Backward accumulates: a second call doubles the gradients.
  Vec dw2 = dw;
  MatmulBackward<double>(nullptr, dw2.data(), nullptr, r.data(), in.data(), w.data(), n, c, oc);
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw2[i], 2 * dw[i], 1e-12);
}

TEST(CpuKernels, Embedding) {
  const int64_t b = 2, t = 3, c = 4, vocab = 5;
  std::vector<uint32_t> tokens{0, 3, 3, 4, 1, 0};
  Vec wte = Random(vocab * c, 5), wpe = Random(t * c, 6), r = Random(b * t * c, 7), out(b * t * c);
  auto loss = [&] {
    EmbeddingForward(out.data(), tokens.data(), wte.data(), wpe.data(), b, t, c);
    return DotAll(out, r);
  };
  Vec dwte(wte.size()), dwpe(wpe.size());
  EmbeddingBackward(dwte.data(), dwpe.data(), r.data(), tokens.data(), b, t, c);
  ExpectGradient(wte, dwte, loss, "dwte");
  ExpectGradient(wpe, dwpe, loss, "dwpe");
}

TEST(CpuKernels, LayerNorm) {
  const int64_t n = 3, c = 8;
  Vec in = Random(n * c, 8, 2.0), w = Random(c, 9), b = Random(c, 10), r = Random(n * c, 11);
  Vec out(n * c), mean(n), rstd(n);
  auto loss = [&] {
    LayerNormForward(out.data(), mean.data(), rstd.data(), in.data(), w.data(), b.data(), n, c);
    return DotAll(out, r);
  };
  loss();
  Vec din(in.size()), dw(c), db(c);
  LayerNormBackward(din.data(), dw.data(), db.data(), r.data(), in.data(), w.data(), mean.data(), rstd.data(), n, c);
  ExpectGradient(in, din, loss, "din");
  ExpectGradient(w, dw, loss, "dweight");
  ExpectGradient(b, db, loss, "dbias");
}

TEST(CpuKernels, RmsNorm) {
  const int64_t n = 3, c = 8;
  Vec in = Random(n * c, 12, 2.0), w = Random(c, 13), r = Random(n * c, 14), out(n * c), rstd(n);
  auto loss = [&] {
    RmsNormForward(out.data(), rstd.data(), in.data(), w.data(), n, c);
    return DotAll(out, r);
  };
  loss();
  Vec din(in.size()), dw(c);
  RmsNormBackward(din.data(), dw.data(), r.data(), in.data(), w.data(), rstd.data(), n, c);
  ExpectGradient(in, din, loss, "din");
  ExpectGradient(w, dw, loss, "dweight");
}

TEST(CpuKernels, ActivationsAndResidual) {
  const int64_t n = 16;
  Vec x = Random(n, 15, 2.0), u = Random(n, 16), r = Random(n, 17), out(n);
  auto gelu = [&] {
    GeluForward(out.data(), x.data(), n);
    return DotAll(out, r);
  };
  Vec dx(n);
  GeluBackward(dx.data(), x.data(), r.data(), n);
  ExpectGradient(x, dx, gelu, "gelu");
  auto swiglu = [&] {
    SwigluForward(out.data(), x.data(), u.data(), n);
    return DotAll(out, r);
  };
  Vec dg(n), du(n);
  SwigluBackward(dg.data(), du.data(), r.data(), x.data(), u.data(), n);
  ExpectGradient(x, dg, swiglu, "dgate");
  ExpectGradient(u, du, swiglu, "dup");
  auto residual = [&] {
    ResidualForward(out.data(), x.data(), u.data(), n);
    return DotAll(out, r);
  };
  Vec da(n), db(n);
  ResidualBackward(da.data(), db.data(), r.data(), n);
  ExpectGradient(x, da, residual, "da");
  ExpectGradient(u, db, residual, "db");
}

TEST(CpuKernels, Rope) {
  const int64_t b = 2, t = 5, heads = 3, hd = 6;
  Vec x = Random(b * t * heads * hd, 18), r = Random(x.size(), 19);
  auto loss = [&] {
    Vec y = x;
    RopeForward(y.data(), b, t, heads, hd, 10000.0);
    return DotAll(y, r);
  };
  Vec dx = r;
  RopeBackward(dx.data(), b, t, heads, hd, 10000.0);
  ExpectGradient(x, dx, loss, "rope");
  // Position 0 is not rotated; a rotation keeps each pair's length.
  Vec y = x;
  RopeForward(y.data(), b, t, heads, hd, 10000.0);
  for (int64_t d = 0; d < hd; ++d) EXPECT_DOUBLE_EQ(y[d], x[d]);
  int64_t p = (1 * heads + 0) * hd;  // batch 0, position 1, head 0, pair 0
  EXPECT_NEAR(std::hypot(y[p], y[p + 1]), std::hypot(x[p], x[p + 1]), 1e-12);
}

void CheckAttention(int64_t heads, int64_t kv_heads) {
  AttentionShape s{2, 4, heads, kv_heads, 3};
  size_t qn = s.b * s.t * heads * s.head_dim, kvn = s.b * s.t * kv_heads * s.head_dim;
  Vec q = Random(qn, 20), k = Random(kvn, 21), v = Random(kvn, 22), r = Random(qn, 23);
  Vec out(qn), att(s.b * heads * s.t * s.t);
  auto loss = [&] {
    AttentionForward(out.data(), att.data(), q.data(), k.data(), v.data(), s);
    return DotAll(out, r);
  };
  loss();
  // Causal: nothing above the diagonal, rows of probabilities sum to 1.
  for (int64_t row = 0; row < s.b * heads * s.t; ++row) {
    int64_t pos = row % s.t;
    double sum = 0;
    for (int64_t j = 0; j < s.t; ++j) {
      if (j > pos) {
        EXPECT_EQ(att[row * s.t + j], 0.0);
      }
      sum += att[row * s.t + j];
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  Vec dq(qn), dk(kvn), dv(kvn);
  AttentionBackward(dq.data(), dk.data(), dv.data(), r.data(), att.data(), q.data(), k.data(), v.data(), s);
  ExpectGradient(q, dq, loss, "dq");
  ExpectGradient(k, dk, loss, "dk");
  ExpectGradient(v, dv, loss, "dv");
}

TEST(CpuKernels, AttentionMultiHead) { CheckAttention(2, 2); }
TEST(CpuKernels, AttentionGroupedQuery) { CheckAttention(4, 2); }

TEST(CpuKernels, CrossEntropy) {
  const int64_t n = 4, v = 6;
  std::vector<uint32_t> targets{0, 5, 2, 2};
  Vec logits = Random(n * v, 24, 3.0), dl = Random(n, 25), losses(n), probs(n * v);
  auto loss = [&] {
    CrossEntropyForward(losses.data(), probs.data(), logits.data(), targets.data(), n, v);
    return DotAll(losses, dl);
  };
  loss();
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(losses[i], -std::log(probs[i * v + targets[i]]), 1e-12);
  Vec dlogits(n * v);
  CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), dl.data(), n, v);
  ExpectGradient(logits, dlogits, loss, "dlogits");
  // Huge logits stay finite.
  Vec big(v, 0.0);
  big[3] = 1e4;
  Vec one(1), p(v);
  uint32_t target = 0;
  CrossEntropyForward(one.data(), p.data(), big.data(), &target, 1, v);
  EXPECT_NEAR(one[0], 1e4, 1e-6);
}

// The float kernels compute what the double ones do, to float precision.
TEST(CpuKernels, FloatMatchesDouble) {
  const int64_t n = 6, c = 16, oc = 8;
  Vec in = Random(n * c, 26), w = Random(oc * c, 27), b = Random(oc, 28);
  std::vector<float> fin(in.begin(), in.end()), fw(w.begin(), w.end()), fb(b.begin(), b.end());
  Vec out(n * oc), mean(n), rstd(n), norm(n * c);
  std::vector<float> fout(n * oc), fmean(n), frstd(n), fnorm(n * c);
  MatmulForward(out.data(), in.data(), w.data(), b.data(), n, c, oc);
  MatmulForward(fout.data(), fin.data(), fw.data(), fb.data(), n, c, oc);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(fout[i], out[i], 1e-5 * std::max(1.0, std::abs(out[i])));
  Vec lw(c, 1.0), lb(c, 0.0);
  std::vector<float> flw(c, 1.0f), flb(c, 0.0f);
  LayerNormForward(norm.data(), mean.data(), rstd.data(), in.data(), lw.data(), lb.data(), n, c);
  LayerNormForward(fnorm.data(), fmean.data(), frstd.data(), fin.data(), flw.data(), flb.data(), n, c);
  for (size_t i = 0; i < norm.size(); ++i) EXPECT_NEAR(fnorm[i], norm[i], 1e-5);
}

}  // namespace
}  // namespace avf::cpu

namespace avf::cpu {
namespace {

// Two vocab-parallel halves, combined as the tensor group would (max of the
// maxima, sums of the target logits and of the exponentials), give the full
// softmax cross-entropy, its probabilities and its gradient.
TEST(CpuKernels, VocabParallelCrossEntropyMatchesFull) {
  const int64_t n = 4, v = 6, half = 3;
  std::vector<uint32_t> targets{0, 5, 2, 3};
  Vec logits = Random(n * v, 31, 3.0), dl = Random(n, 32), losses(n), probs(n * v), dlogits(n * v);
  CrossEntropyForward(losses.data(), probs.data(), logits.data(), targets.data(), n, v);
  CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), dl.data(), n, v);
  Vec shard[2] = {Vec(n * half), Vec(n * half)}, maxes(2 * n), target(n), sum(n), gmax(n);
  for (int r = 0; r < 2; ++r) {
    for (int64_t i = 0; i < n; ++i) std::copy_n(&logits[i * v + r * half], half, &shard[r][i * half]);
    Vec t(n);
    CrossEntropyStats(&maxes[r * n], t.data(), shard[r].data(), targets.data(), n, half, r * half);
    for (int64_t i = 0; i < n; ++i) target[i] += t[i];
  }
  MaxOverBlocks(gmax.data(), maxes.data(), n, int64_t{2});
  Vec p[2] = {Vec(n * half), Vec(n * half)};
  for (int r = 0; r < 2; ++r) {
    Vec s(n);
    CrossEntropySoftmax(p[r].data(), s.data(), shard[r].data(), gmax.data(), n, half);
    for (int64_t i = 0; i < n; ++i) sum[i] += s[i];
  }
  for (int r = 0; r < 2; ++r) {
    Vec l(n), d(n * half);
    CrossEntropyFinish(l.data(), p[r].data(), sum.data(), gmax.data(), target.data(), n, half);
    CrossEntropyBackward(d.data(), p[r].data(), targets.data(), dl.data(), n, half, r * half);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(l[i], losses[i], 1e-12);
      for (int64_t j = 0; j < half; ++j) {
        EXPECT_NEAR(p[r][i * half + j], probs[i * v + r * half + j], 1e-12);
        EXPECT_NEAR(d[i * half + j], dlogits[i * v + r * half + j], 1e-12);
      }
    }
  }
}

// The embedding rows of two vocab halves add up to the full lookup; the
// backward of each half touches only its own rows.
TEST(CpuKernels, VocabParallelEmbeddingMatchesFull) {
  const int64_t b = 2, t = 3, c = 4, vocab = 6, half = 3;
  std::vector<uint32_t> tokens{0, 3, 5, 4, 1, 2};
  Vec wte = Random(vocab * c, 33), wpe = Random(t * c, 34), full(b * t * c), sum(b * t * c), r = Random(b * t * c, 35);
  EmbeddingForward(full.data(), tokens.data(), wte.data(), wpe.data(), b, t, c);
  Vec dfull(vocab * c), dpos(t * c);
  EmbeddingBackward(dfull.data(), dpos.data(), r.data(), tokens.data(), b, t, c);
  for (int64_t rank = 0; rank < 2; ++rank) {
    Vec out(b * t * c), d(half * c);
    // Only rank 0 adds the (replicated) position embedding, so the sum has it once.
    EmbeddingForward(out.data(), tokens.data(), wte.data() + rank * half * c, rank == 0 ? wpe.data() : nullptr, b, t, c,
                     rank * half, half);
    for (size_t i = 0; i < out.size(); ++i) sum[i] += out[i];
    EmbeddingBackward<double>(d.data(), nullptr, r.data(), tokens.data(), b, t, c, rank * half, half);
    for (int64_t i = 0; i < half * c; ++i) EXPECT_NEAR(d[i], dfull[rank * half * c + i], 1e-12);
  }
  for (size_t i = 0; i < sum.size(); ++i) EXPECT_NEAR(sum[i], full[i], 1e-12);
}

}  // namespace
}  // namespace avf::cpu
