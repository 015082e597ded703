// The kernel contract: one suite, written once against the backend interface
// (backend/backend.h), that every backend instantiates (the CPU one in
// kernel_contract_cpu_test.cpp, the CUDA one in kernel_contract_cuda_test.cpp,
// which skips without a GPU). Each kernel runs on the backend's own memory,
// and its outputs are compared with the fp64 CPU kernels on the same inputs:
// the inputs are generated in T and widened, so only the kernel's own
// arithmetic is measured.
//
// Tolerances. A backend computes in fp32 and rounds each output once to T:
// that moves a value by at most u |value|, u = 2^-8 for bf16, 2^-24 for fp32
// (kRound). fp32 sums and transcendental functions, in whatever order the
// backend chooses, add at most kFp32 = 1e-5 of the tensor's largest value
// (sums of at most a few thousand terms of one sign's magnitude, each
// partial sum rounded by 2^-24; exp/tanh within a few ulps). A backward adds
// into a gradient that already holds values, with one rounding. Kernels that
// round an intermediate to T (attention's probabilities, cross-entropy's
// exponentials) are checked in norm, one kRound per rounding.
//
// A provider P names the backend: P::T, P::Get() (null when it cannot run
// here) and P::Skip() (why).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "backend/buffer.h"
#include "cpu/cpu_backend.h"

namespace avf::contract {

using backend::AttentionShape;
using backend::Buffer;
using backend::Kernels;
using Doubles = std::vector<double>;

template <typename T>
constexpr double kRound = std::is_same_v<T, float> ? 0x1p-24 : 0x1p-8;
constexpr double kFp32 = 1e-5;

template <typename T>
auto ToT(double x) -> T {
  return backend::Narrow<T>(static_cast<float>(x));
}

// Normal values of the given scale, representable in T (held as double).
template <typename T>
auto Random(size_t n, uint32_t seed, double scale = 1.0) -> Doubles {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d(0.0, scale);
  Doubles v(n);
  for (double& x : v) x = backend::Widen(ToT<T>(d(gen)));
  return v;
}

// Host values into the backend's memory as E (T, or the statistics' float).
template <typename E, typename K>
auto Upload(K& k, const Doubles& host) -> Buffer<E> {
  std::vector<E> v(host.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<E, float> || std::is_same_v<E, double>) v[i] = static_cast<E>(host[i]);
    else v[i] = ToT<E>(host[i]);
  }
  Buffer<E> b(k, v.size());
  k.CopyFromHost(b.data(), v.data(), v.size() * sizeof(E));
  return b;
}

template <typename E, typename K>
auto Download(K& k, const Buffer<E>& b) -> Doubles {
  std::vector<E> v(b.size());
  k.CopyToHost(v.data(), b.data(), v.size() * sizeof(E));
  Doubles out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = backend::Widen(v[i]);
  return out;
}

inline auto MaxAbs(const Doubles& v) -> double {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// |got - want| <= kRound<T> (roundings |want| + extra) + kFp32 max|want|, per element.
template <typename T>
void ExpectWithin(const Doubles& got, const Doubles& want, double roundings, double extra, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double slack = kFp32 * MaxAbs(want);
  for (size_t i = 0; i < got.size(); ++i) {
    double bound = kRound<T> * (roundings * std::fabs(want[i]) + extra) + slack;
    ASSERT_NEAR(got[i], want[i], bound) << what << "[" << i << "]";
  }
}

// ||got - want|| <= (roundings kRound<T> + kFp32) ||want|| (2-norms).
template <typename T>
void ExpectNormWithin(const Doubles& got, const Doubles& want, double roundings, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) diff += (got[i] - want[i]) * (got[i] - want[i]), norm += want[i] * want[i];
  EXPECT_LE(std::sqrt(diff), (roundings * kRound<T> + kFp32) * std::sqrt(norm)) << what;
}

// The fp64 reference and the backend under test, with buffers in each.
template <typename P>
class KernelContract : public ::testing::Test {
 protected:
  using T = typename P::T;
  void SetUp() override {
    k_ = P::Get();
    if (!k_) GTEST_SKIP() << P::Skip();
  }
  auto k() -> Kernels<T>& { return *k_; }
  auto ref() -> Kernels<double>& { return cpu::Backend<double>(); }
  auto Mine(const Doubles& v) -> Buffer<T> { return Upload<T>(*k_, v); }
  auto MineWide(const Doubles& v) -> Buffer<float> { return Upload<float>(*k_, v); }
  auto Ref(const Doubles& v) -> Buffer<double> { return Upload<double>(ref(), v); }
  auto Got(const Buffer<T>& b) -> Doubles { return Download(*k_, b); }
  auto GotWide(const Buffer<float>& b) -> Doubles { return Download(*k_, b); }
  auto Want(const Buffer<double>& b) -> Doubles { return Download(ref(), b); }
  template <typename E>
  auto Tokens(Kernels<E>& k, const std::vector<uint32_t>& t) -> Buffer<uint32_t> {
    Buffer<uint32_t> b(k, t.size());
    k.CopyFromHost(b.data(), t.data(), t.size() * sizeof(uint32_t));
    return b;
  }

 private:
  Kernels<T>* k_ = nullptr;
};

TYPED_TEST_SUITE_P(KernelContract);

// Every output of a product is a sum of c (or n) products, rounded once.
TYPED_TEST_P(KernelContract, Matmul) {
  using T = typename TypeParam::T;
  const int64_t n = 70, c = 96, oc = 40;
  Doubles in = Random<T>(n * c, 1), w = Random<T>(oc * c, 2), b = Random<T>(oc, 3), dout = Random<T>(n * oc, 4);
  Doubles din = Random<T>(n * c, 5), dw = Random<T>(oc * c, 6), db = Random<T>(oc, 7);
  Buffer<T> mo = this->Mine(Doubles(n * oc)), mi = this->Mine(in), mw = this->Mine(w), mb = this->Mine(b);
  Buffer<T> md = this->Mine(dout), mdi = this->Mine(din), mdw = this->Mine(dw), mdb = this->Mine(db);
  Buffer<double> ro = this->Ref(Doubles(n * oc)), ri = this->Ref(in), rw = this->Ref(w), rb = this->Ref(b);
  Buffer<double> rd = this->Ref(dout), rdi = this->Ref(din), rdw = this->Ref(dw), rdb = this->Ref(db);
  this->k().MatmulForward(mo.data(), mi.data(), mw.data(), mb.data(), n, c, oc);
  this->k().MatmulBackward(mdi.data(), mdw.data(), mdb.data(), md.data(), mi.data(), mw.data(), n, c, oc);
  this->ref().MatmulForward(ro.data(), ri.data(), rw.data(), rb.data(), n, c, oc);
  this->ref().MatmulBackward(rdi.data(), rdw.data(), rdb.data(), rd.data(), ri.data(), rw.data(), n, c, oc);
  ExpectWithin<T>(this->Got(mo), this->Want(ro), 1, 0, "out");
  ExpectWithin<T>(this->Got(mdi), this->Want(rdi), 1, 0, "din");
  ExpectWithin<T>(this->Got(mdw), this->Want(rdw), 1, 0, "dweight");
  ExpectWithin<T>(this->Got(mdb), this->Want(rdb), 1, 0, "dbias");
}

// A vocab-parallel slice [3, 9) of a 12-token vocabulary: tokens outside it
// give zero rows; repeated tokens sum their rows.
TYPED_TEST_P(KernelContract, Embedding) {
  using T = typename TypeParam::T;
  const int64_t b = 3, t = 40, c = 48, first = 3, count = 6;
  std::vector<uint32_t> tokens(b * t);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * 7 % 12);
  Doubles wte = Random<T>(count * c, 8), wpe = Random<T>(t * c, 9), dout = Random<T>(b * t * c, 10);
  Doubles dwte = Random<T>(count * c, 11), dwpe = Random<T>(t * c, 12);
  Buffer<T> mo = this->Mine(Doubles(b * t * c)), mwte = this->Mine(wte), mwpe = this->Mine(wpe);
  Buffer<T> md = this->Mine(dout), mdwte = this->Mine(dwte), mdwpe = this->Mine(dwpe);
  Buffer<double> ro = this->Ref(Doubles(b * t * c)), rwte = this->Ref(wte), rwpe = this->Ref(wpe);
  Buffer<double> rd = this->Ref(dout), rdwte = this->Ref(dwte), rdwpe = this->Ref(dwpe);
  Buffer<uint32_t> mt = this->Tokens(this->k(), tokens), rt = this->Tokens(this->ref(), tokens);
  this->k().EmbeddingForward(mo.data(), mt.data(), mwte.data(), mwpe.data(), b, t, c, first, count);
  this->k().EmbeddingBackward(mdwte.data(), mdwpe.data(), md.data(), mt.data(), b, t, c, first, count);
  this->ref().EmbeddingForward(ro.data(), rt.data(), rwte.data(), rwpe.data(), b, t, c, first, count);
  this->ref().EmbeddingBackward(rdwte.data(), rdwpe.data(), rd.data(), rt.data(), b, t, c, first, count);
  ExpectWithin<T>(this->Got(mo), this->Want(ro), 1, 0, "out");
  ExpectWithin<T>(this->Got(mdwte), this->Want(rdwte), 1, 0, "dwte");
  ExpectWithin<T>(this->Got(mdwpe), this->Want(rdwpe), 1, 0, "dwpe");
}

// The statistics stay fp32 (mean and rstd to kFp32, never rounded to T);
// 300 rows, so row-parallel column sums cross their blocks.
TYPED_TEST_P(KernelContract, LayerNorm) {
  using T = typename TypeParam::T;
  const int64_t n = 300, c = 768;
  Doubles in = Random<T>(n * c, 13, 2.0), w = Random<T>(c, 14), b = Random<T>(c, 15), dout = Random<T>(n * c, 16);
  Doubles din = Random<T>(n * c, 17), dw = Random<T>(c, 18), db = Random<T>(c, 19);
  Buffer<T> mo = this->Mine(Doubles(n * c)), mi = this->Mine(in), mw = this->Mine(w), mb = this->Mine(b);
  Buffer<T> md = this->Mine(dout), mdi = this->Mine(din), mdw = this->Mine(dw), mdb = this->Mine(db);
  Buffer<float> mmean = this->MineWide(Doubles(n)), mrstd = this->MineWide(Doubles(n));
  Buffer<double> ro = this->Ref(Doubles(n * c)), ri = this->Ref(in), rw = this->Ref(w), rb = this->Ref(b);
  Buffer<double> rd = this->Ref(dout), rdi = this->Ref(din), rdw = this->Ref(dw), rdb = this->Ref(db);
  Buffer<double> rmean = this->Ref(Doubles(n)), rrstd = this->Ref(Doubles(n));
  this->k().LayerNormForward(mo.data(), mmean.data(), mrstd.data(), mi.data(), mw.data(), mb.data(), n, c);
  this->k().LayerNormBackward(mdi.data(), mdw.data(), mdb.data(), md.data(), mi.data(), mw.data(), mmean.data(),
                              mrstd.data(), n, c);
  this->ref().LayerNormForward(ro.data(), rmean.data(), rrstd.data(), ri.data(), rw.data(), rb.data(), n, c);
  this->ref().LayerNormBackward(rdi.data(), rdw.data(), rdb.data(), rd.data(), ri.data(), rw.data(), rmean.data(),
                                rrstd.data(), n, c);
  ExpectWithin<float>(this->GotWide(mmean), this->Want(rmean), 1, 0, "mean");
  ExpectWithin<float>(this->GotWide(mrstd), this->Want(rrstd), 1, 0, "rstd");
  ExpectWithin<T>(this->Got(mo), this->Want(ro), 1, 0, "out");
  ExpectWithin<T>(this->Got(mdi), this->Want(rdi), 1, 0, "din");
  ExpectWithin<T>(this->Got(mdw), this->Want(rdw), 1, 0, "dweight");
  ExpectWithin<T>(this->Got(mdb), this->Want(rdb), 1, 0, "dbias");
}

TYPED_TEST_P(KernelContract, RmsNorm) {
  using T = typename TypeParam::T;
  const int64_t n = 300, c = 200;
  Doubles in = Random<T>(n * c, 20, 2.0), w = Random<T>(c, 21), dout = Random<T>(n * c, 22);
  Doubles din = Random<T>(n * c, 23), dw = Random<T>(c, 24);
  Buffer<T> mo = this->Mine(Doubles(n * c)), mi = this->Mine(in), mw = this->Mine(w), md = this->Mine(dout);
  Buffer<T> mdi = this->Mine(din), mdw = this->Mine(dw);
  Buffer<float> mrstd = this->MineWide(Doubles(n));
  Buffer<double> ro = this->Ref(Doubles(n * c)), ri = this->Ref(in), rw = this->Ref(w), rd = this->Ref(dout);
  Buffer<double> rdi = this->Ref(din), rdw = this->Ref(dw), rrstd = this->Ref(Doubles(n));
  this->k().RmsNormForward(mo.data(), mrstd.data(), mi.data(), mw.data(), n, c);
  this->k().RmsNormBackward(mdi.data(), mdw.data(), md.data(), mi.data(), mw.data(), mrstd.data(), n, c);
  this->ref().RmsNormForward(ro.data(), rrstd.data(), ri.data(), rw.data(), n, c);
  this->ref().RmsNormBackward(rdi.data(), rdw.data(), rd.data(), ri.data(), rw.data(), rrstd.data(), n, c);
  ExpectWithin<float>(this->GotWide(mrstd), this->Want(rrstd), 1, 0, "rstd");
  ExpectWithin<T>(this->Got(mo), this->Want(ro), 1, 0, "out");
  ExpectWithin<T>(this->Got(mdi), this->Want(rdi), 1, 0, "din");
  ExpectWithin<T>(this->Got(mdw), this->Want(rdw), 1, 0, "dweight");
}

// 70,001 elements: more than one pass of a grid-stride loop of 256-thread blocks.
TYPED_TEST_P(KernelContract, ActivationsAndResidual) {
  using T = typename TypeParam::T;
  const int64_t n = 70001;
  Doubles x = Random<T>(n, 25, 3.0), u = Random<T>(n, 26), dy = Random<T>(n, 27);
  Doubles dx = Random<T>(n, 28), du = Random<T>(n, 29);
  Buffer<T> mx = this->Mine(x), mu = this->Mine(u), mdy = this->Mine(dy), mo = this->Mine(Doubles(n));
  Buffer<double> rx = this->Ref(x), ru = this->Ref(u), rdy = this->Ref(dy), ro = this->Ref(Doubles(n));
  auto check = [&](const char* what, auto&& kernel) {
    Buffer<T> mda = this->Mine(dx), mdb = this->Mine(du);
    Buffer<double> rda = this->Ref(dx), rdb = this->Ref(du);
    kernel(this->k(), mo.data(), mda.data(), mdb.data(), mx.data(), mu.data(), mdy.data());
    kernel(this->ref(), ro.data(), rda.data(), rdb.data(), rx.data(), ru.data(), rdy.data());
    ExpectWithin<T>(this->Got(mo), this->Want(ro), 1, 0, what);
    ExpectWithin<T>(this->Got(mda), this->Want(rda), 1, 0, what);
    ExpectWithin<T>(this->Got(mdb), this->Want(rdb), 1, 0, what);
  };
  check("gelu", [&](auto& k, auto* o, auto* da, auto*, auto* a, auto*, auto* d) {
    k.GeluForward(o, a, n), k.GeluBackward(da, a, d, n);
  });
  check("swiglu", [&](auto& k, auto* o, auto* da, auto* db, auto* a, auto* b, auto* d) {
    k.SwigluForward(o, a, b, n), k.SwigluBackward(da, db, d, a, b, n);
  });
  check("residual", [&](auto& k, auto* o, auto* da, auto* db, auto* a, auto* b, auto* d) {
    k.ResidualForward(o, a, b, n), k.ResidualBackward(da, db, d, n);
  });
}

TYPED_TEST_P(KernelContract, Rope) {
  using T = typename TypeParam::T;
  const int64_t b = 2, t = 70, heads = 3, hd = 64;
  Doubles x = Random<T>(b * t * heads * hd, 30);
  Buffer<T> mf = this->Mine(x), mb = this->Mine(x);
  Buffer<double> rf = this->Ref(x), rb = this->Ref(x);
  this->k().RopeForward(mf.data(), b, t, heads, hd, 10000.0);
  this->k().RopeBackward(mb.data(), b, t, heads, hd, 10000.0);
  this->ref().RopeForward(rf.data(), b, t, heads, hd, 10000.0);
  this->ref().RopeBackward(rb.data(), b, t, heads, hd, 10000.0);
  ExpectWithin<T>(this->Got(mf), this->Want(rf), 1, 0, "rope");
  ExpectWithin<T>(this->Got(mb), this->Want(rb), 1, 0, "rope'");
}

// T = 130 crosses two 64-row tiles with a ragged end; two query heads per
// key/value head. Output and gradients are products over probabilities a
// backend may round to T (on the CPU they are stored in T): norm-wise within
// three roundings, as the CPU's bf16 kernel against its float one.
TYPED_TEST_P(KernelContract, Attention) {
  using T = typename TypeParam::T;
  AttentionShape s{2, 130, 4, 2, 64};
  size_t qn = s.b * s.t * s.heads * s.head_dim, kvn = s.b * s.t * s.kv_heads * s.head_dim;
  Doubles q = Random<T>(qn, 31), k = Random<T>(kvn, 32), v = Random<T>(kvn, 33), dout = Random<T>(qn, 34);
  Doubles dq = Random<T>(qn, 35), dk = Random<T>(kvn, 36), dv = Random<T>(kvn, 37);
  Buffer<T> mq = this->Mine(q), mk = this->Mine(k), mv = this->Mine(v), md = this->Mine(dout);
  Buffer<T> mo = this->Mine(Doubles(qn)), mdq = this->Mine(dq), mdk = this->Mine(dk), mdv = this->Mine(dv);
  Buffer<uint8_t> mstate(this->k(), this->k().AttentionStateBytes(s));
  Buffer<double> rq = this->Ref(q), rk = this->Ref(k), rv = this->Ref(v), rd = this->Ref(dout);
  Buffer<double> ro = this->Ref(Doubles(qn)), rdq = this->Ref(dq), rdk = this->Ref(dk), rdv = this->Ref(dv);
  Buffer<uint8_t> rstate(this->ref(), this->ref().AttentionStateBytes(s));
  this->k().AttentionForward(mo.data(), mstate.data(), mq.data(), mk.data(), mv.data(), s);
  this->k().AttentionBackward(mdq.data(), mdk.data(), mdv.data(), md.data(), mo.data(), mstate.data(), mq.data(),
                              mk.data(), mv.data(), s);
  this->ref().AttentionForward(ro.data(), rstate.data(), rq.data(), rk.data(), rv.data(), s);
  this->ref().AttentionBackward(rdq.data(), rdk.data(), rdv.data(), rd.data(), ro.data(), rstate.data(), rq.data(),
                                rk.data(), rv.data(), s);
  ExpectNormWithin<T>(this->Got(mo), this->Want(ro), 3, "out");
  ExpectNormWithin<T>(this->Got(mdq), this->Want(rdq), 3, "dq");
  ExpectNormWithin<T>(this->Got(mdk), this->Want(rdk), 3, "dk");
  ExpectNormWithin<T>(this->Got(mdv), this->Want(rdv), 3, "dv");
}

// A vocab shard [1000, 4000) of the logits: targets inside and outside it.
// Row max and target logit are exact; sums and losses fp32; probabilities
// rounded twice (exponential, then normalised), dlogits once more.
TYPED_TEST_P(KernelContract, CrossEntropy) {
  using T = typename TypeParam::T;
  const int64_t n = 6, v = 3000, first = 1000;
  std::vector<uint32_t> targets{1000, 3999, 17, 1017, 2500, 4000};
  Doubles logits = Random<T>(n * v, 38, 3.0), dl = Random<T>(n, 39, 0.1), dlogits = Random<T>(n * v, 40);
  Buffer<T> mz = this->Mine(logits), mp = this->Mine(Doubles(n * v)), mdz = this->Mine(dlogits);
  Buffer<float> mmax = this->MineWide(Doubles(n)), mtl = this->MineWide(Doubles(n)), msum = this->MineWide(Doubles(n));
  Buffer<float> ml = this->MineWide(Doubles(n)), mdl = this->MineWide(dl);
  Buffer<double> rz = this->Ref(logits), rp = this->Ref(Doubles(n * v)), rdz = this->Ref(dlogits);
  Buffer<double> rmax = this->Ref(Doubles(n)), rtl = this->Ref(Doubles(n)), rsum = this->Ref(Doubles(n));
  Buffer<double> rl = this->Ref(Doubles(n)), rdl = this->Ref(dl);
  Buffer<uint32_t> mt = this->Tokens(this->k(), targets), rt = this->Tokens(this->ref(), targets);
  auto run = [&](auto& k, auto& z, auto& p, auto& dz, auto& max, auto& tl, auto& sum, auto& l, auto& d, auto& t) {
    k.CrossEntropyStats(max.data(), tl.data(), z.data(), t.data(), n, v, first);
    k.CrossEntropySoftmax(p.data(), sum.data(), z.data(), max.data(), n, v);
    k.CrossEntropyFinish(l.data(), p.data(), sum.data(), max.data(), tl.data(), n, v);
    k.CrossEntropyBackward(dz.data(), p.data(), t.data(), d.data(), n, v, first);
  };
  run(this->k(), mz, mp, mdz, mmax, mtl, msum, ml, mdl, mt);
  run(this->ref(), rz, rp, rdz, rmax, rtl, rsum, rl, rdl, rt);
  EXPECT_EQ(this->GotWide(mmax), this->Want(rmax));
  EXPECT_EQ(this->GotWide(mtl), this->Want(rtl));
  ExpectWithin<float>(this->GotWide(msum), this->Want(rsum), 1, 0, "row sums");
  ExpectWithin<float>(this->GotWide(ml), this->Want(rl), 1, 0, "losses");
  ExpectWithin<T>(this->Got(mp), this->Want(rp), 2.01, 0, "probs");
  ExpectWithin<T>(this->Got(mdz), this->Want(rdz), 1, 2 * MaxAbs(dl), "dlogits");
}

TYPED_TEST_P(KernelContract, MaxOverBlocks) {
  const int64_t count = 1000, blocks = 3;
  Doubles all = Random<float>(count * blocks, 41);
  Buffer<float> mine = this->MineWide(all), out = this->MineWide(Doubles(count));
  this->k().MaxOverBlocks(out.data(), mine.data(), count, blocks);
  Doubles want(count, -INFINITY);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t i = 0; i < count; ++i) want[i] = std::max(want[i], all[b * count + i]);
  }
  EXPECT_EQ(this->GotWide(out), want);
}

// The squares are summed in double: any order is within 1e-12 of the sum.
TYPED_TEST_P(KernelContract, SquaredNormAndScale) {
  using T = typename TypeParam::T;
  const int64_t n = 300007;
  Doubles x = Random<T>(n, 42, 2.0);
  std::vector<optim::ElementRun> runs{{0, 5}, {17, 1}, {100, 200000}, {200200, 99000}, {n - 3, 3}};
  Buffer<T> mx = this->Mine(x);
  double want = 0;
  for (const optim::ElementRun& r : runs) {
    for (int64_t i = r.first; i < r.first + r.count; ++i) want += x[i] * x[i];
  }
  EXPECT_NEAR(this->k().SquaredNorm(mx.data(), runs), want, 1e-12 * want);
  EXPECT_EQ(this->k().SquaredNorm(mx.data(), {}), 0.0);
  this->k().Scale(mx.data(), n, 0.37f);
  Doubles scaled(x.size());
  for (size_t i = 0; i < x.size(); ++i) scaled[i] = x[i] * static_cast<double>(0.37f);
  ExpectWithin<T>(this->Got(mx), scaled, 1, 0, "scaled");
}

// AdamW is fp32 by definition (optim::AdamWElement): against the CPU
// optimizer's fp32 update on the same values, within 1e-6 of each tensor's
// largest value (compilers fuse different multiply-adds); the published copy
// is the updated master rounded once.
TYPED_TEST_P(KernelContract, AdamW) {
  using T = typename TypeParam::T;
  const int64_t n = 100003;
  Doubles master = Random<float>(n, 43), grads = Random<T>(n, 44, 0.1);
  Doubles m = Random<float>(n, 45, 0.01), v = Random<float>(n, 46, 0.01);
  for (double& x : v) x = std::fabs(x);
  std::vector<optim::ElementRun> decayed{{0, 40000}, {50000, 10}, {60000, n - 60000}};
  optim::OptimizerConfig config{.lr = 1e-3, .weight_decay = 0.1, .warmup = 2, .total_steps = 10};
  optim::ElementScalars s = optim::ElementScalarsOf(config, optim::ScalarsOf(config, 3, 2.5));
  Buffer<float> mm = this->MineWide(master), mmo = this->MineWide(m), mv = this->MineWide(v);
  Buffer<T> mg = this->Mine(grads), mp = this->Mine(Doubles(n));
  this->k().AdamW(mm.data(), mg.data(), mmo.data(), mv.data(), n, decayed, s, mp.data());
  std::vector<float> wm(master.begin(), master.end()), wmo(m.begin(), m.end()), wv(v.begin(), v.end());
  std::vector<T> wg(n);
  for (int64_t i = 0; i < n; ++i) wg[i] = ToT<T>(grads[i]);
  optim::UpdateElements(wm.data(), wg.data(), wmo.data(), wv.data(), n, decayed, s);
  auto expect_close = [](const Doubles& got, const std::vector<float>& want, const char* what) {
    Doubles w(want.begin(), want.end());
    double bound = 1e-6 * MaxAbs(w);
    for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(got[i], w[i], bound) << what << "[" << i << "]";
  };
  expect_close(this->GotWide(mm), wm, "master");
  expect_close(this->GotWide(mmo), wmo, "m");
  expect_close(this->GotWide(mv), wv, "v");
  Doubles published = this->Got(mp), updated = this->GotWide(mm);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(published[i], backend::Widen(ToT<T>(updated[i]))) << "publish[" << i << "]";
}

REGISTER_TYPED_TEST_SUITE_P(KernelContract, Matmul, Embedding, LayerNorm, RmsNorm, ActivationsAndResidual, Rope,
                            Attention, CrossEntropy, MaxOverBlocks, SquaredNormAndScale, AdamW);

}  // namespace avf::contract
