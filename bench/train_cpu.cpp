// train_cpu: the CPU training step on GPT-2 124M-shaped layers (hidden 768,
// 12 heads, MLP 3072, vocabulary 50,257) at sequence length 256. Prints
// tokens/s, the model's FLOP/s (6 x parameters x tokens plus attention), the
// share of the step spent in BLAS GEMMs, and each GEMM shape's FLOP/s next to
// the BLAS's own peak (a large square sgemm). It asserts no timing.
//   train_cpu [--layers N] [--batch B] [--steps S] [--quick]
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "model/transformer.h"

namespace {

using Clock = std::chrono::steady_clock;

auto Seconds(Clock::time_point since) -> double { return std::chrono::duration<double>(Clock::now() - since).count(); }

// FLOP/s of one sgemm shape, the best of a few runs.
auto GemmRate(int m, int n, int k, bool tb, int runs) -> double {
  std::vector<float> a(static_cast<size_t>(m) * k, 0.5f), b(static_cast<size_t>(k) * n, 0.25f), c(static_cast<size_t>(m) * n);
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    Clock::time_point t = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(),
                tb ? k : n, 0.0f, c.data(), n);
    best = std::min(best, Seconds(t));
  }
  return 2.0 * m * n * k / best;
}

struct Args {
  int layers = 2, batch = 4, steps = 3;
  bool quick = false;
};

auto Parse(int argc, char** argv) -> Args {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (s == "--layers") a.layers = next();
    else if (s == "--batch") a.batch = next();
    else if (s == "--steps") a.steps = next();
    else if (s == "--quick") a.quick = true;
  }
  if (a.quick) a.layers = 1, a.batch = 1, a.steps = 1;
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = Parse(argc, argv);
  const int seq = args.quick ? 32 : 256, hidden = args.quick ? 64 : 768, vocab = args.quick ? 512 : 50257;
  avf::model::ModelConfig c{avf::model::Arch::Gpt2, args.layers, hidden, 12, 12, 4 * hidden, vocab, seq, true, 10000};
  if (args.quick) c.heads = c.kv_heads = 4;
  avf::model::Transformer<float> model(c);
  model.Initialize(1);
  int64_t n = static_cast<int64_t>(args.batch) * seq;
  std::vector<uint32_t> tokens(n), targets(n);
  for (int64_t i = 0; i < n; ++i) tokens[i] = static_cast<uint32_t>(i * 7 % vocab), targets[i] = static_cast<uint32_t>(i * 11 % vocab);
  // Model FLOPs of a training step: 6 per parameter per token, plus attention (12 x layers x T x C per token).
  double flops_per_token = 6.0 * model.layout().total + 12.0 * c.layers * seq * hidden;
  std::printf("GPT-2 124M-shaped: %d layers, hidden %d, vocabulary %d, batch %d x seq %d (%lld parameters)\n",
              static_cast<int>(c.layers), hidden, vocab, args.batch, seq, static_cast<long long>(model.layout().total));
  double best = 1e30, gemm_share = 0, gemm_rate = 0;
  for (int s = 0; s < args.steps + 1; ++s) {  // the first step warms up
    avf::cpu::ResetGemmCounters();
    Clock::time_point t = Clock::now();
    model.Forward(tokens.data(), targets.data(), args.batch, seq);
    model.ZeroGradients();
    model.Backward();
    double step = Seconds(t);
    if (s > 0 && step < best) {
      best = step;
      gemm_share = avf::cpu::GemmSeconds() / step;
      gemm_rate = avf::cpu::GemmFlops() / avf::cpu::GemmSeconds();
    }
  }
  std::printf("step (forward + backward, best of %d): %.3f s, %.0f tokens/s, %.2f GFLOP/s model\n", args.steps, best,
              n / best, flops_per_token * n / best / 1e9);
  std::printf("time in BLAS GEMMs: %.1f%% of the step, at %.2f GFLOP/s\n", 100 * gemm_share, gemm_rate / 1e9);
  int big = args.quick ? 128 : 2048;
  double peak = GemmRate(big, big, big, false, 3);
  std::printf("BLAS peak (sgemm %d^3): %.2f GFLOP/s\n", big, peak / 1e9);
  struct Shape {
    const char* what;
    int m, n, k;
    bool tb;
  } shapes[] = {{"qkv (forward)", static_cast<int>(n), 3 * hidden, hidden, true},
                {"mlp fc (forward)", static_cast<int>(n), 4 * hidden, hidden, true},
                {"mlp proj (forward)", static_cast<int>(n), hidden, 4 * hidden, true},
                {"lm head (forward)", static_cast<int>(n), vocab, hidden, true}};
  for (const Shape& s : shapes) {
    double rate = GemmRate(s.m, s.n, s.k, s.tb, 3);
    std::printf("  %-20s %5d x %5d x %5d: %7.2f GFLOP/s, %5.1f%% of peak\n", s.what, s.m, s.n, s.k, rate / 1e9,
                100 * rate / peak);
  }
  return 0;
}
