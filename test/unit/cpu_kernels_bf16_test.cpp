// The bf16 mixed-precision CPU kernels against the float ones on the same
// inputs. Every input is bf16-representable, so both kernels see the same
// values and compute in fp32; the bf16 kernel then rounds each output once.
// Rounding to nearest moves a value by at most 2^-8 of its magnitude (bf16
// has 8 significant bits), so a bf16 output is within 2^-8 |float output|,
// plus what the float kernels' own summation order may change (kFloatSlack).
// Kernels that round an intermediate (attention's probabilities and dscores,
// cross-entropy's exponentials) get one 2^-8 more per rounding, as stated at
// each. Also: the statistics stay fp32, a backward adds into a bf16 gradient
// with one rounding per call, FastExp's accuracy, and the same bits on one
// and two threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/vector_math.h"

namespace avf::cpu {
namespace {

using backend::Bf16;
using Floats = std::vector<float>;
using Bf16s = std::vector<Bf16>;

// bf16's unit roundoff: round to nearest moves x by at most 2^-8 |x|.
constexpr double kRounding = 0x1p-8;
// Summation order (vector lanes, GEMM blocking) may differ between the float
// and the bf16 kernels: allowed on top, relative to the tensor's largest value.
constexpr double kFloatSlack = 1e-5;

// Normal values, rounded to bf16 (held as float).
auto Random(size_t n, uint32_t seed, float scale = 1.0f) -> Floats {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Floats v(n);
  for (float& x : v) x = numeric::ToFloat(numeric::ToBf16(d(gen)));
  return v;
}

auto ToBf16(const Floats& v) -> Bf16s {
  Bf16s out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = numeric::ToBf16(v[i]);
  return out;
}

auto MaxAbs(const Floats& v) -> double {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// |got - want| <= 2^-8 (terms |want| + extra) + kFloatSlack max|want| for
// every element: `terms` roundings of the value itself, `extra` for the
// roundings of intermediates.
void ExpectWithin(const Bf16s& got, const Floats& want, double terms, double extra, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  double slack = kFloatSlack * MaxAbs(want);
  for (size_t i = 0; i < got.size(); ++i) {
    double bound = kRounding * (terms * std::fabs(want[i]) + extra) + slack;
    ASSERT_NEAR(numeric::ToFloat(got[i]), want[i], bound) << what << "[" << i << "]";
  }
}

// ||got - want|| <= roundings x 2^-8 ||want|| (2-norms), for outputs that are
// GEMMs over rounded intermediates.
void ExpectNormWithin(const Bf16s& got, const Floats& want, double roundings, const char* what) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = numeric::ToFloat(got[i]) - want[i];
    diff += d * d, norm += static_cast<double>(want[i]) * want[i];
  }
  EXPECT_LE(std::sqrt(diff), roundings * kRounding * std::sqrt(norm)) << what;
}

TEST(CpuKernelsBf16, FastExpIsAccurate) {
  double worst = 0;
  for (double x = -87.3; x <= 88.3; x += 1e-4) {
    auto xf = static_cast<float>(x);
    double want = std::exp(static_cast<double>(xf));
    worst = std::max(worst, std::fabs(detail::FastExp(xf) - want) / want);
  }
  EXPECT_LT(worst, 2e-7);  // about 3 float ulps
  EXPECT_EQ(detail::FastExp(0.0f), 1.0f);
  EXPECT_EQ(detail::FastExp(-100.0f), 0.0f);
  EXPECT_EQ(detail::FastExp(-INFINITY), 0.0f);
  EXPECT_EQ(detail::FastExp(100.0f), INFINITY);
  EXPECT_TRUE(std::isnan(detail::FastExp(NAN)));
}

TEST(CpuKernelsBf16, Matmul) {
  const int64_t n = 33, c = 40, oc = 24;
  Floats in = Random(n * c, 1), w = Random(oc * c, 2), b = Random(oc, 3), dout = Random(n * oc, 4);
  Floats out(n * oc), din = Random(n * c, 5), dw = Random(oc * c, 6), db = Random(oc, 7);
  Bf16s bout(out.size()), bdin = ToBf16(din), bdw = ToBf16(dw), bdb = ToBf16(db);
  MatmulForward(out.data(), in.data(), w.data(), b.data(), n, c, oc);
  MatmulBackward(din.data(), dw.data(), db.data(), dout.data(), in.data(), w.data(), n, c, oc);
  Bf16s bin = ToBf16(in), bw = ToBf16(w), bb = ToBf16(b), bdout = ToBf16(dout);
  MatmulForward(bout.data(), bin.data(), bw.data(), bb.data(), n, c, oc);
  MatmulBackward(bdin.data(), bdw.data(), bdb.data(), bdout.data(), bin.data(), bw.data(), n, c, oc);
  ExpectWithin(bout, out, 1, 0, "out");
  ExpectWithin(bdin, din, 1, 0, "din");
  ExpectWithin(bdw, dw, 1, 0, "dweight");
  ExpectWithin(bdb, db, 1, 0, "dbias");
}

TEST(CpuKernelsBf16, Embedding) {
  const int64_t b = 3, t = 8, c = 48, vocab = 10;
  std::vector<uint32_t> tokens(b * t);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * 7 % vocab);
  Floats wte = Random(vocab * c, 8), wpe = Random(t * c, 9), dout = Random(b * t * c, 10), out(b * t * c);
  Floats dwte = Random(vocab * c, 11), dwpe = Random(t * c, 12);
  Bf16s bout(out.size()), bdwte = ToBf16(dwte), bdwpe = ToBf16(dwpe);
  EmbeddingForward(out.data(), tokens.data(), wte.data(), wpe.data(), b, t, c);
  EmbeddingBackward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), b, t, c);
  Bf16s bwte = ToBf16(wte), bwpe = ToBf16(wpe), bdout = ToBf16(dout);
  EmbeddingForward(bout.data(), tokens.data(), bwte.data(), bwpe.data(), b, t, c);
  EmbeddingBackward(bdwte.data(), bdwpe.data(), bdout.data(), tokens.data(), b, t, c);
  ExpectWithin(bout, out, 1, 0, "out");
  ExpectWithin(bdwte, dwte, 1, 0, "dwte");
  ExpectWithin(bdwpe, dwpe, 1, 0, "dwpe");
}

// The statistics are fp32: the bf16 kernel's mean and rstd are the float
// kernel's, to float rounding (a bf16 rstd would be off by up to 2^-8).
TEST(CpuKernelsBf16, LayerNormKeepsFp32Statistics) {
  const int64_t n = 9, c = 768;
  Floats in = Random(n * c, 13, 2.0f), w = Random(c, 14), b = Random(c, 15), dout = Random(n * c, 16);
  Floats out(n * c), mean(n), rstd(n), din = Random(n * c, 17), dw = Random(c, 18), db = Random(c, 19);
  Floats bmean(n), brstd(n);
  Bf16s bout(out.size()), bdin = ToBf16(din), bdw = ToBf16(dw), bdb = ToBf16(db);
  LayerNormForward(out.data(), mean.data(), rstd.data(), in.data(), w.data(), b.data(), n, c);
  LayerNormBackward(din.data(), dw.data(), db.data(), dout.data(), in.data(), w.data(), mean.data(), rstd.data(), n, c);
  Bf16s bin = ToBf16(in), bw = ToBf16(w), bb = ToBf16(b), bdout = ToBf16(dout);
  LayerNormForward(bout.data(), bmean.data(), brstd.data(), bin.data(), bw.data(), bb.data(), n, c);
  LayerNormBackward(bdin.data(), bdw.data(), bdb.data(), bdout.data(), bin.data(), bw.data(), bmean.data(),
                    brstd.data(), n, c);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(bmean[i], mean[i], 1e-6 * (1 + std::fabs(mean[i])));
    EXPECT_NEAR(brstd[i], rstd[i], 1e-6 * rstd[i]);
  }
  ExpectWithin(bout, out, 1, 0, "out");
  ExpectWithin(bdin, din, 1, 0, "din");
  ExpectWithin(bdw, dw, 1, 0, "dweight");
  ExpectWithin(bdb, db, 1, 0, "dbias");
}

TEST(CpuKernelsBf16, RmsNorm) {
  const int64_t n = 9, c = 200;
  Floats in = Random(n * c, 20, 2.0f), w = Random(c, 21), dout = Random(n * c, 22);
  Floats out(n * c), rstd(n), brstd(n), din = Random(n * c, 23), dw = Random(c, 24);
  Bf16s bout(out.size()), bdin = ToBf16(din), bdw = ToBf16(dw);
  RmsNormForward(out.data(), rstd.data(), in.data(), w.data(), n, c);
  RmsNormBackward(din.data(), dw.data(), dout.data(), in.data(), w.data(), rstd.data(), n, c);
  Bf16s bin = ToBf16(in), bw = ToBf16(w), bdout = ToBf16(dout);
  RmsNormForward(bout.data(), brstd.data(), bin.data(), bw.data(), n, c);
  RmsNormBackward(bdin.data(), bdw.data(), bdout.data(), bin.data(), bw.data(), brstd.data(), n, c);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(brstd[i], rstd[i], 1e-6 * rstd[i]);
  ExpectWithin(bout, out, 1, 0, "out");
  ExpectWithin(bdin, din, 1, 0, "din");
  ExpectWithin(bdw, dw, 1, 0, "dweight");
}

TEST(CpuKernelsBf16, ActivationsAndResidual) {
  const int64_t n = 5000;
  Floats x = Random(n, 25, 3.0f), u = Random(n, 26), dy = Random(n, 27), out(n);
  Floats dx = Random(n, 28), du = Random(n, 29);
  Bf16s bx = ToBf16(x), bu = ToBf16(u), bdy = ToBf16(dy), bout(n);
  auto check_forward = [&](const char* what, auto kernel) {
    kernel(out.data(), x.data(), u.data());
    kernel(bout.data(), bx.data(), bu.data());
    ExpectWithin(bout, out, 1, 0, what);
  };
  auto check_backward = [&](const char* what, auto kernel) {
    Floats da = dx, db = du;
    Bf16s bda = ToBf16(dx), bdb = ToBf16(du);
    kernel(da.data(), db.data(), dy.data(), x.data(), u.data());
    kernel(bda.data(), bdb.data(), bdy.data(), bx.data(), bu.data());
    ExpectWithin(bda, da, 1, 0, what);
    ExpectWithin(bdb, db, 1, 0, what);
  };
  check_forward("gelu", [&](auto* o, auto* a, auto*) { GeluForward(o, a, n); });
  check_forward("swiglu", [&](auto* o, auto* a, auto* b) { SwigluForward(o, a, b, n); });
  check_forward("residual", [&](auto* o, auto* a, auto* b) { ResidualForward(o, a, b, n); });
  check_backward("gelu'", [&](auto* da, auto* db, auto* d, auto* a, auto*) {
    GeluBackward(da, a, d, n);
    GeluBackward(db, a, d, n);
  });
  check_backward("swiglu'", [&](auto* da, auto* db, auto* d, auto* a, auto* b) { SwigluBackward(da, db, d, a, b, n); });
  check_backward("residual'", [&](auto* da, auto* db, auto* d, auto*, auto*) { ResidualBackward(da, db, d, n); });
}

TEST(CpuKernelsBf16, Rope) {
  const int64_t b = 2, t = 20, heads = 3, hd = 16;
  Floats x = Random(b * t * heads * hd, 30);
  Floats y = x;
  Bf16s by = ToBf16(x);
  RopeForward(y.data(), b, t, heads, hd, 10000.0);
  RopeForward(by.data(), b, t, heads, hd, 10000.0);
  ExpectWithin(by, y, 1, 0, "rope");
  Floats dx = x;
  Bf16s bdx = ToBf16(x);
  RopeBackward(dx.data(), b, t, heads, hd, 10000.0);
  RopeBackward(bdx.data(), b, t, heads, hd, 10000.0);
  ExpectWithin(bdx, dx, 1, 0, "rope'");
}

// Probabilities: one rounding of the fp32 softmax. Output and gradients are
// GEMMs over rounded probabilities or dscores and are rounded themselves (dq
// adds into a rounded gradient too): norm-wise, within three roundings.
TEST(CpuKernelsBf16, Attention) {
  AttentionShape s{2, 80, 4, 2, 16};  // two causal blocks, two query heads per key/value head
  size_t qn = s.b * s.t * s.heads * s.head_dim, kvn = s.b * s.t * s.kv_heads * s.head_dim;
  Floats q = Random(qn, 31), k = Random(kvn, 32), v = Random(kvn, 33), dout = Random(qn, 34);
  Floats out(qn), att(s.b * s.heads * s.t * s.t), dq = Random(qn, 35), dk = Random(kvn, 36), dv = Random(kvn, 37);
  Bf16s bout(qn), batt(att.size()), bdq = ToBf16(dq), bdk = ToBf16(dk), bdv = ToBf16(dv);
  AttentionForward(out.data(), att.data(), q.data(), k.data(), v.data(), s);
  AttentionBackward(dq.data(), dk.data(), dv.data(), dout.data(), att.data(), q.data(), k.data(), v.data(), s);
  Bf16s bq = ToBf16(q), bk = ToBf16(k), bv = ToBf16(v), bdout = ToBf16(dout);
  AttentionForward(bout.data(), batt.data(), bq.data(), bk.data(), bv.data(), s);
  AttentionBackward(bdq.data(), bdk.data(), bdv.data(), bdout.data(), batt.data(), bq.data(), bk.data(), bv.data(), s);
  ExpectWithin(batt, att, 1, 0, "att");
  ExpectNormWithin(bout, out, 3, "out");
  ExpectNormWithin(bdq, dq, 3, "dq");
  ExpectNormWithin(bdk, dk, 3, "dk");
  ExpectNormWithin(bdv, dv, 3, "dv");
}

// Row max and target logit are exact; sums and losses fp32. Probabilities
// are rounded twice (exponential, then normalised); dlogits once, over
// probabilities that carry those two roundings (2 |dloss| of extra).
TEST(CpuKernelsBf16, CrossEntropy) {
  const int64_t n = 6, v = 3000;
  std::vector<uint32_t> targets{0, 2999, 17, 17, 1500, 3};
  Floats logits = Random(n * v, 38, 3.0f), dl = Random(n, 39, 0.1f), dlogits = Random(n * v, 40);
  Floats max(n), target(n), sum(n), losses(n), probs(n * v), bmax(n), btarget(n), bsum(n), blosses(n);
  Bf16s blogits = ToBf16(logits), bprobs(probs.size()), bdlogits = ToBf16(dlogits);
  CrossEntropyStats(max.data(), target.data(), logits.data(), targets.data(), n, v, 0);
  CrossEntropySoftmax(probs.data(), sum.data(), logits.data(), max.data(), n, v);
  CrossEntropyFinish(losses.data(), probs.data(), sum.data(), max.data(), target.data(), n, v);
  CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), dl.data(), n, v);
  CrossEntropyStats(bmax.data(), btarget.data(), blogits.data(), targets.data(), n, v, 0);
  CrossEntropySoftmax(bprobs.data(), bsum.data(), blogits.data(), bmax.data(), n, v);
  CrossEntropyFinish(blosses.data(), bprobs.data(), bsum.data(), bmax.data(), btarget.data(), n, v);
  CrossEntropyBackward(bdlogits.data(), bprobs.data(), targets.data(), dl.data(), n, v);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(bmax[i], max[i]);
    EXPECT_EQ(btarget[i], target[i]);
    EXPECT_NEAR(bsum[i], sum[i], 1e-6 * sum[i]);
    EXPECT_NEAR(blosses[i], losses[i], 1e-6 * (1 + losses[i]));
  }
  ExpectWithin(bprobs, probs, 2.01, 0, "probs");
  ExpectWithin(bdlogits, dlogits, 1, 2 * MaxAbs(dl), "dlogits");
}

// A backward adds its whole contribution with one rounding: 64 rows of 2^-10
// each add up to 2^-4, which 1 + 2^-4 = 1.0625 shows, where rounding after
// every row would have left 1 (2^-10 is below half a bf16 ulp of 1).
TEST(CpuKernelsBf16, BackwardRoundsOncePerCall) {
  const int64_t n = 64, c = 8, oc = 8;
  Bf16s dout_rows = ToBf16(Floats(n * oc, 0x1p-5f)), in = ToBf16(Floats(n * c, 0x1p-5f));
  Bf16s w = ToBf16(Floats(oc * c, 0x1p-5f)), dw = ToBf16(Floats(oc * c, 1.0f)), db = ToBf16(Floats(oc, 256.0f));
  Bf16s din = ToBf16(Floats(n * c, 1.0f));
  // dweight += dout^T in: 64 products of 2^-10; dbias += 64 x 2^-5 = 2 onto
  // 256 (whose ulp is 2); din += dout w: 8 products of 2^-10, 1 + 2^-7.
  MatmulBackward(din.data(), dw.data(), db.data(), dout_rows.data(), in.data(), w.data(), n, c, oc);
  for (Bf16 x : dw) EXPECT_EQ(numeric::ToFloat(x), 1.0625f);
  for (Bf16 x : db) EXPECT_EQ(numeric::ToFloat(x), 258.0f);
  for (Bf16 x : din) EXPECT_EQ(numeric::ToFloat(x), 1.0078125f);
  // A token seen 64 times, a position seen once per batch row (64 rows).
  std::vector<uint32_t> tokens(n, 3);
  Bf16s dout = ToBf16(Floats(n * c, 0x1p-10f)), dwte = ToBf16(Floats(5 * c, 1.0f)), dwpe = ToBf16(Floats(c, 1.0f));
  EmbeddingBackward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), n, 1, c);
  for (int64_t j = 0; j < c; ++j) EXPECT_EQ(numeric::ToFloat(dwte[3 * c + j]), 1.0625f);
  for (Bf16 x : dwpe) EXPECT_EQ(numeric::ToFloat(x), 1.0625f);
  // LayerNorm's dbias sums its 64 rows the same way.
  Bf16s x = ToBf16(Random(n * c, 41)), ln_w = ToBf16(Floats(c, 1.0f)), ln_dw = ToBf16(Floats(c, 0.0f));
  Bf16s ln_db = ToBf16(Floats(c, 256.0f)), ln_din(n * c);
  Floats mean(n), rstd(n, 1.0f);
  Bf16s ln_dout = ToBf16(Floats(n * c, 0x1p-5f));
  LayerNormBackward(ln_din.data(), ln_dw.data(), ln_db.data(), ln_dout.data(), x.data(), ln_w.data(), mean.data(),
                    rstd.data(), n, c);
  for (Bf16 v : ln_db) EXPECT_EQ(numeric::ToFloat(v), 258.0f);
}

// The bytes of every output of `run`, on one thread and then on two.
void ExpectSameOnOneAndTwoThreads(const std::function<std::vector<char>()>& run, const std::string& what) {
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<char> one = run();
  omp_set_num_threads(2);
  for (int repeat = 0; repeat < 3; ++repeat) EXPECT_TRUE(run() == one) << what << ", run " << repeat;
  omp_set_num_threads(saved);
}

template <typename T>
void Append(std::vector<char>& bytes, const std::vector<T>& v) {
  const char* p = reinterpret_cast<const char*>(v.data());
  bytes.insert(bytes.end(), p, p + v.size() * sizeof(T));
}

template <typename T>
auto As(const Floats& v) -> std::vector<T> {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = backend::Narrow<T>(v[i]);
  return out;
}

// Each kernel above its threading threshold: norms (threads take rows, then
// columns), embedding (token groups), element-wise, matmul (the GEMMs, and
// bias columns).
template <typename T>
void CheckDenseThreadCountIndependence(const std::string& type) {
  using W = backend::Wide<T>;
  const int64_t n = 64, c = 512, b = 4, t = 16, vocab = 6;
  std::vector<T> x = As<T>(Random(n * c, 42)), w = As<T>(Random(c, 43)), bias = As<T>(Random(c, 44));
  std::vector<T> dy = As<T>(Random(n * c, 45));
  std::vector<uint32_t> tokens(b * t);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * i % vocab);
  ExpectSameOnOneAndTwoThreads(
      [&] {
        std::vector<T> out(n * c), din(n * c), dw(c), db(c);
        std::vector<W> mean(n), rstd(n);
        LayerNormForward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias.data(), n, c);
        LayerNormBackward(din.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), n,
                          c);
        RmsNormBackward(din.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), n, c);
        std::vector<char> bytes;
        for (const auto* v : {&out, &din, &dw, &db}) Append(bytes, *v);
        return bytes;
      },
      type + " norms");
  ExpectSameOnOneAndTwoThreads(
      [&] {
        std::vector<T> dwte(vocab * c), dwpe(t * c), act(n * c);
        EmbeddingBackward(dwte.data(), dwpe.data(), dy.data(), tokens.data(), b, t, c);
        GeluBackward(act.data(), x.data(), dy.data(), n * c);
        RopeForward(act.data(), b, t, c / 64, 64, 10000.0);
        std::vector<char> bytes;
        for (const auto* v : {&dwte, &dwpe, &act}) Append(bytes, *v);
        return bytes;
      },
      type + " embedding, gelu, rope");
  const int64_t oc = 64;
  std::vector<T> weight = As<T>(Random(oc * c, 50));
  ExpectSameOnOneAndTwoThreads(
      [&] {
        std::vector<T> out(n * oc), din(n * c), dw(oc * c), db(oc);
        MatmulForward(out.data(), x.data(), weight.data(), bias.data(), n, c, oc);
        MatmulBackward(din.data(), dw.data(), db.data(), out.data(), x.data(), weight.data(), n, c, oc);
        std::vector<char> bytes;
        for (const auto* v : {&out, &din, &dw, &db}) Append(bytes, *v);
        return bytes;
      },
      type + " matmul");
}

// Attention (threads take heads) and cross-entropy (rows).
template <typename T>
void CheckAttentionAndLossThreadCountIndependence(const std::string& type) {
  using W = backend::Wide<T>;
  AttentionShape s{2, 80, 4, 2, 16};
  size_t qn = s.b * s.t * s.heads * s.head_dim, kvn = s.b * s.t * s.kv_heads * s.head_dim;
  std::vector<T> q = As<T>(Random(qn, 46)), k = As<T>(Random(kvn, 47)), v = As<T>(Random(kvn, 48));
  ExpectSameOnOneAndTwoThreads(
      [&] {
        std::vector<T> out(qn), att(s.b * s.heads * s.t * s.t), dq(qn), dk(kvn), dv(kvn);
        AttentionForward(out.data(), att.data(), q.data(), k.data(), v.data(), s);
        AttentionBackward(dq.data(), dk.data(), dv.data(), q.data(), att.data(), q.data(), k.data(), v.data(), s);
        std::vector<char> bytes;
        for (const auto* vec : {&out, &att, &dq, &dk, &dv}) Append(bytes, *vec);
        return bytes;
      },
      type + " attention");
  const int64_t rows = 8, v_size = 4000;
  std::vector<T> logits = As<T>(Random(rows * v_size, 49, 3.0f));
  std::vector<uint32_t> targets{1, 2, 3, 5, 8, 13, 21, 34};
  ExpectSameOnOneAndTwoThreads(
      [&] {
        std::vector<W> losses(rows), dl(rows, W(0.125));
        std::vector<T> probs(rows * v_size), dlogits(rows * v_size);
        CrossEntropyForward(losses.data(), probs.data(), logits.data(), targets.data(), rows, v_size);
        CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), dl.data(), rows, v_size);
        std::vector<char> bytes;
        Append(bytes, losses), Append(bytes, probs), Append(bytes, dlogits);
        return bytes;
      },
      type + " cross-entropy");
}

TEST(CpuKernelsBf16, SameBitsOnOneAndTwoThreads) {
  CheckDenseThreadCountIndependence<Bf16>("bf16");
  CheckDenseThreadCountIndependence<float>("float");
  CheckAttentionAndLossThreadCountIndependence<Bf16>("bf16");
  CheckAttentionAndLossThreadCountIndependence<float>("float");
}

}  // namespace
}  // namespace avf::cpu
