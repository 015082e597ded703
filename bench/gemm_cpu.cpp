// gemm_cpu: GFLOP/s of the CPU kernels' GEMMs (runtime/cpu/gemm.h) on this
// machine. It prints the CPU (model, cores, the feature flags that decide
// which kernels run), the path GemmPath() reports, a large square fp32 GEMM
// through oneDNN (our entry point) and through OpenBLAS (its core printed),
// bf16 GEMMs through oneDNN, every GEMM of a GPT-2 124M training step (batch
// 4 x 256 tokens, hidden 768) in fp32 and bf16, and the attention's per-head
// GEMMs called one after another and from an OpenMP parallel loop over the
// heads. Each figure is the best of N runs after one warm-up run (which
// creates oneDNN's primitives). It asserts no timing.
//   gemm_cpu [--runs N] [--quick]
//   --quick   every shape 16 times smaller in each dimension, run once (the
//             ctest entry bench/gemm_smoke: it keeps this compiling and running)
#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/blas_core.h"
#include "cpu/gemm.h"

namespace {

using avf::backend::Bf16;
using avf::cpu::detail::Gemm;

struct Args {
  int runs = 5;
  bool quick = false;
};

auto Parse(int argc, char** argv) -> Args {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--runs" && i + 1 < argc) a.runs = std::max(1, std::atoi(argv[++i]));
    else if (s == "--quick") a.quick = true;
  }
  if (a.quick) a.runs = 1;
  return a;
}

// The "model name" line and the flags of /proc/cpuinfo's first CPU.
void PrintMachine() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown", flags;
  while (std::getline(in, line) && (model == "unknown" || flags.empty())) {
    std::string value = line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1);
    if (line.rfind("model name", 0) == 0) model = value.substr(value.find_first_not_of(' '));
    if (line.rfind("flags", 0) == 0) flags = value + " ";
  }
  std::printf("machine: %s, %ld cores online, OpenMP %d threads;", model.c_str(), sysconf(_SC_NPROCESSORS_ONLN),
              omp_get_max_threads());
  for (const char* flag : {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}) {
    bool has = flags.find(" " + std::string(flag) + " ") != std::string::npos;
    std::printf(" %s %s", flag, has ? "yes" : "no");
  }
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  std::printf("\nGEMM path: %s\nOpenBLAS (fp64; fp32 here for comparison): core %s (OPENBLAS_CORETYPE %s)\n",
              avf::cpu::GemmPath().c_str(), avf::cpu::OpenBlasCore().c_str(), core ? core : "unset");
}

// One GEMM as the kernels call it: row-major, op(A) is m x k, op(B) k x n.
struct Shape {
  const char* name;
  int64_t m, n, k;
  bool trans_a, trans_b;
  int64_t lda, ldb, ldc;
  float alpha, beta;

  auto flops() const -> double { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * k; }
  auto a_size() const -> size_t { return static_cast<size_t>((trans_a ? k : m) * lda); }
  auto b_size() const -> size_t { return static_cast<size_t>((trans_b ? n : k) * ldb); }
  auto c_size() const -> size_t { return static_cast<size_t>(m * ldc); }
};

// A packed GEMM (leading dimensions the stored widths).
auto Packed(const char* name, int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, float beta) -> Shape {
  return {name, m, n, k, trans_a, trans_b, trans_a ? m : k, trans_b ? k : n, n, 1.0f, beta};
}

// Every dimension divided by `by` (at least 1): the --quick shapes.
auto Shrunk(Shape s, int64_t by) -> Shape {
  auto div = [by](int64_t x) { return std::max<int64_t>(1, x / by); };
  s.m = div(s.m), s.n = div(s.n), s.k = div(s.k), s.lda = div(s.lda), s.ldb = div(s.ldb), s.ldc = div(s.ldc);
  return s;
}

// Best seconds of `runs` calls of `f`, after one warm-up call.
auto BestSeconds(int runs, const std::function<void()>& f) -> double {
  f();
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// Operand buffers of one shape in both element types.
struct Buffers {
  std::vector<float> a, b, c;
  std::vector<Bf16> ha, hb, hc;
  explicit Buffers(const Shape& s)
      : a(s.a_size(), 0.5f),
        b(s.b_size(), 0.25f),
        c(s.c_size(), 0.0f),
        ha(s.a_size(), avf::numeric::ToBf16(0.5f)),
        hb(s.b_size(), avf::numeric::ToBf16(0.25f)),
        hc(s.c_size(), avf::numeric::ToBf16(0.0f)) {}
};

enum class Path { Fp32OneDnn, Fp32OpenBlas, Bf16IntoBf16, Bf16IntoFp32 };

void RunOnce(const Shape& s, Path path, Buffers& x) {
  switch (path) {
    case Path::Fp32OneDnn:
      return Gemm<float>(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, x.a.data(), s.lda, x.b.data(), s.ldb, s.beta,
                         x.c.data(), s.ldc);
    case Path::Fp32OpenBlas:
      return cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans, s.trans_b ? CblasTrans : CblasNoTrans,
                         static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), s.alpha, x.a.data(),
                         static_cast<int>(s.lda), x.b.data(), static_cast<int>(s.ldb), s.beta, x.c.data(),
                         static_cast<int>(s.ldc));
    case Path::Bf16IntoBf16:
      return Gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, x.ha.data(), s.lda, x.hb.data(), s.ldb, s.beta,
                  x.hc.data(), s.ldc);
    case Path::Bf16IntoFp32:
      return Gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, x.ha.data(), s.lda, x.hb.data(), s.ldb, s.beta,
                  x.c.data(), s.ldc);
  }
}

auto Gflops(const Shape& s, Path path, Buffers& x, int runs) -> double {
  return s.flops() / BestSeconds(runs, [&] { RunOnce(s, path, x); }) * 1e-9;
}

void PrintLargeSquare(const Args& args) {
  int64_t big = args.quick ? 128 : 2048;
  Shape square = Packed("square", big, big, big, false, false, 0);
  Shape qkv = args.quick ? Shrunk(Packed("", 1024, 3072, 768, false, false, 0), 16)
                         : Packed("", 1024, 3072, 768, false, false, 0);
  Buffers x(square), y(qkv);
  std::printf("\n%lld^3, GFLOP/s: fp32 oneDNN %.1f, fp32 OpenBLAS %.1f, bf16 oneDNN %.1f (fp32 C %.1f)\n",
              static_cast<long long>(big), Gflops(square, Path::Fp32OneDnn, x, args.runs),
              Gflops(square, Path::Fp32OpenBlas, x, args.runs), Gflops(square, Path::Bf16IntoBf16, x, args.runs),
              Gflops(square, Path::Bf16IntoFp32, x, args.runs));
  std::printf("%lldx%lldx%lld, GFLOP/s: bf16 oneDNN %.1f (fp32 C %.1f)\n", static_cast<long long>(qkv.m),
              static_cast<long long>(qkv.n), static_cast<long long>(qkv.k),
              Gflops(qkv, Path::Bf16IntoBf16, y, args.runs), Gflops(qkv, Path::Bf16IntoFp32, y, args.runs));
}

// The GEMMs of one GPT-2 124M layer and of the LM head at batch 4 x 256:
// forward out = in W^T, backward dX += dY W and dW += dY^T X (beta 1).
auto Gpt2Shapes() -> std::vector<Shape> {
  const int64_t n = 1024, c = 768, vocab = 50257;
  struct Linear {
    const char* name;
    int64_t in, out;
  };
  std::vector<Shape> shapes;
  for (Linear l : {Linear{"qkv", c, 3 * c}, Linear{"attn proj", c, c}, Linear{"fc", c, 4 * c},
                   Linear{"fc proj", 4 * c, c}, Linear{"lm head", c, vocab}}) {
    shapes.push_back(Packed(l.name, n, l.out, l.in, false, true, 0));
    shapes.push_back(Packed(l.name, n, l.in, l.out, false, false, 1));
    shapes.push_back(Packed(l.name, l.out, l.in, n, true, false, 1));
  }
  return shapes;
}

auto Operation(const Shape& s) -> const char* {
  if (s.trans_a) return "dW += dY^T X";
  return s.trans_b ? "Y = X W^T" : "dX += dY W";
}

void PrintGpt2Shapes(const Args& args) {
  std::printf("\nGPT-2 124M, batch 4 x 256 (GFLOP/s, best of %d)\n", args.runs);
  std::printf("%-10s %-13s %-17s %11s %11s %11s %11s\n", "layer", "GEMM", "m x n x k", "fp32 oneDNN", "fp32 OpenBLAS",
              "bf16", "bf16->fp32");
  for (Shape s : Gpt2Shapes()) {
    if (args.quick) s = Shrunk(s, 16);
    Buffers x(s);
    int runs = s.flops() > 5e10 ? std::max(1, args.runs / 2) : args.runs;
    std::string dims = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    double fp32 = Gflops(s, Path::Fp32OneDnn, x, runs), blas = Gflops(s, Path::Fp32OpenBlas, x, runs);
    double bf16 = Gflops(s, Path::Bf16IntoBf16, x, runs), bf16_fp32 = Gflops(s, Path::Bf16IntoFp32, x, runs);
    std::printf("%-10s %-13s %-17s %11.1f %11.1f %11.1f %11.1f\n", s.name, Operation(s), dims.c_str(), fp32, blas, bf16,
                bf16_fp32);
  }
}

// The attention's tensors for `bh` = batch x heads heads of t x hd: Q (also
// standing in for K and V) and the output as (batch, t, heads x hd) rows, the
// probabilities as (batch x heads, t, t).
template <typename T>
struct AttentionTensors {
  int64_t bh, t, hd, heads;
  std::vector<T> q, probs, out;
  AttentionTensors(int64_t batch, int64_t heads_, int64_t t_, int64_t hd_)
      : bh(batch * heads_),
        t(t_),
        hd(hd_),
        heads(heads_),
        q(static_cast<size_t>(bh * t * hd), Value(0.5f)),
        probs(static_cast<size_t>(bh * t * t), Value(0.25f)),
        out(q.size()) {}
  static auto Value(float v) -> T { return avf::backend::Narrow<T>(v); }

  // Head i's first element inside the (batch, t, heads x hd) rows.
  auto row(int64_t i) const -> int64_t { return (i / heads) * t * heads * hd + (i % heads) * hd; }
  // scores = scale Q K^T (`scores`) or out = P V, for head i.
  void Gemm(bool scores, int64_t i) {
    int64_t c = heads * hd;
    T* p = &probs[static_cast<size_t>(i * t * t)];
    const T* x = &q[static_cast<size_t>(row(i))];
    if (scores) avf::cpu::detail::Gemm(false, true, t, t, hd, 0.125f, x, c, x, c, 0.0f, p, t);
    else avf::cpu::detail::Gemm(false, false, t, hd, t, 1.0f, p, t, x, c, 0.0f, &out[static_cast<size_t>(row(i))], c);
  }
};

// Seconds for every head's GEMM, called one after another (each GEMM on all
// threads) or from an OpenMP loop over the heads (each on its own thread).
template <typename T>
auto AttentionSeconds(AttentionTensors<T>& x, bool scores, bool omp_over_heads, int runs) -> double {
  return BestSeconds(runs, [&] {
    if (!omp_over_heads) {
      for (int64_t i = 0; i < x.bh; ++i) x.Gemm(scores, i);
      return;
    }
#pragma omp parallel for
    for (int64_t i = 0; i < x.bh; ++i) x.Gemm(scores, i);
  });
}

// The attention's per-head GEMMs at batch 4, 12 heads of 256 x 64.
void PrintAttention(const Args& args) {
  int64_t batch = 4, heads = 12, t = args.quick ? 16 : 256, hd = 64;
  AttentionTensors<float> fp32(batch, heads, t, hd);
  AttentionTensors<Bf16> bf16(batch, heads, t, hd);
  std::printf("\nattention, %lld heads of %lldx%lld, rows %lld apart (GFLOP/s)\n",
              static_cast<long long>(batch * heads), static_cast<long long>(t), static_cast<long long>(hd),
              static_cast<long long>(heads * hd));
  std::printf("%-6s %15s %15s %15s %15s\n", "GEMM", "fp32 serial", "fp32 omp-heads", "bf16 serial", "bf16 omp-heads");
  for (bool scores : {true, false}) {
    double gflop = 2.0 * static_cast<double>(t * t * hd * batch * heads) * 1e-9;
    std::printf("%-6s %15.1f %15.1f %15.1f %15.1f\n", scores ? "Q K^T" : "P V",
                gflop / AttentionSeconds(fp32, scores, false, args.runs),
                gflop / AttentionSeconds(fp32, scores, true, args.runs),
                gflop / AttentionSeconds(bf16, scores, false, args.runs),
                gflop / AttentionSeconds(bf16, scores, true, args.runs));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args = Parse(argc, argv);
  PrintMachine();
  PrintLargeSquare(args);
  PrintGpt2Shapes(args);
  PrintAttention(args);
  return 0;
}
