// train_cpu: the CPU training step on GPT-2 124M-shaped layers (hidden 768,
// 12 heads, MLP 3072, vocabulary 50,257) at sequence length 256, next to a
// straightforward OpenMP fp32 reference of the same model
// (bench/omp_reference.h, in the style of llm.c's train_gpt2.c). Both run on
// the same parameters (Transformer<float>::Initialize) and the same batch.
// First their loss and gradients must agree (exit status 1 otherwise); then
// it prints each one's tokens/s and model FLOP/s (6 x parameters x tokens
// plus attention), the ratio, the threads each used, the share of our step
// spent in BLAS GEMMs, and each GEMM shape's FLOP/s next to the BLAS's own
// peak (a large square sgemm). It asserts no timing.
//   train_cpu [--layers N] [--batch B] [--steps S] [--quick]
#include <cblas.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cpu/blas_core.h"
#include "cpu/kernels.h"
#include "model/transformer.h"
#include "omp_reference.h"

namespace {

using Clock = std::chrono::steady_clock;
using avf::model::ParamLayout;

// Agreement limits: the loss within a relative 1e-4, and in every parameter
// tensor max |ours - reference| / max |ours| below 1e-3.
constexpr double kLossTolerance = 1e-4, kGradTolerance = 1e-3;

auto Seconds(Clock::time_point since) -> double { return std::chrono::duration<double>(Clock::now() - since).count(); }

// FLOP/s of one sgemm shape, the best of a few runs.
auto GemmRate(int m, int n, int k, bool tb, int runs) -> double {
  std::vector<float> a(static_cast<size_t>(m) * k, 0.5f), b(static_cast<size_t>(k) * n, 0.25f),
      c(static_cast<size_t>(m) * n);
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
  if (a.quick) a.layers = 2, a.batch = 2, a.steps = 1;
  return a;
}

// The worst tensor: max |ours - reference| / max |ours| over its elements
// (a NaN or a difference in an all-zero tensor counts as infinite).
struct GradAgreement {
  double worst = 0;
  std::string tensor;
};

auto CompareGradients(const ParamLayout& layout, const float* ours, const float* ref) -> GradAgreement {
  GradAgreement a;
  for (const avf::model::ParamTensor& t : layout.tensors) {
    double diff = 0, scale = 0;
    for (int64_t i = t.offset; i < t.offset + t.size; ++i) {
      double d = std::fabs(static_cast<double>(ours[i]) - ref[i]);
      diff = std::max(diff, std::isnan(d) ? INFINITY : d);
      scale = std::max(scale, std::fabs(static_cast<double>(ours[i])));
    }
    double rel = diff == 0 ? 0 : scale > 0 ? diff / scale : INFINITY;
    if (a.tensor.empty() || rel > a.worst) a.worst = rel, a.tensor = t.name;
  }
  return a;
}

// Prints the agreement of one step of each; false when it is outside the limits.
auto CheckAgreement(const ParamLayout& layout, double loss, double ref_loss, const float* grads, const float* ref_grads)
    -> bool {
  double loss_rel = std::fabs(loss - ref_loss) / std::max(std::fabs(ref_loss), 1e-30);
  GradAgreement g = CompareGradients(layout, grads, ref_grads);
  bool ok = loss_rel < kLossTolerance && g.worst < kGradTolerance;
  std::printf("agreement with the OpenMP reference (same parameters and batch, one step): %s\n", ok ? "ok" : "FAILED");
  std::printf("  loss %.6f (ours) vs %.6f (reference): relative %.2e, limit %.0e\n", loss, ref_loss, loss_rel,
              kLossTolerance);
  std::printf("  gradients, %zu tensors: worst max|diff|/max|grad| %.2e (%s), limit %.0e\n", layout.tensors.size(),
              g.worst, g.tensor.c_str(), kGradTolerance);
  return ok;
}

// Every timed step of each, the best ones, and the GEMM time and FLOPs inside our best one.
struct Best {
  double ours = 1e30, ref = 1e30, gemm_seconds = 0, gemm_flops = 0;
  std::vector<double> ours_steps, ref_steps;
};

void Report(const Best& b, int steps, int64_t n, double flops_per_token) {
  std::printf(
      "ours (runtime kernels; OpenBLAS %s, %d threads; OpenMP %d threads): best of %d steps %.3f s, %.0f "
      "tokens/s, %.2f GFLOP/s model\n",
      openblas_get_corename(), openblas_get_num_threads(), avf::bench::OmpGpt2::Threads(), steps, b.ours, n / b.ours,
      flops_per_token * n / b.ours / 1e9);
  std::printf("  time in BLAS GEMMs: %.1f%% of the step, at %.2f GFLOP/s\n", 100 * b.gemm_seconds / b.ours,
              b.gemm_flops / b.gemm_seconds / 1e9);
  std::printf(
      "reference (bench/omp_reference.cpp, %d OpenMP threads): best of %d steps %.3f s, %.0f tokens/s, "
      "%.2f GFLOP/s model\n",
      avf::bench::OmpGpt2::Threads(), steps, b.ref, n / b.ref, flops_per_token * n / b.ref / 1e9);
  std::printf("ours / reference: %.2fx the tokens/s\n", b.ref / b.ours);
  std::printf("  every step, ours / reference (s):");
  for (size_t i = 0; i < b.ours_steps.size(); ++i) std::printf(" %.2f / %.2f", b.ours_steps[i], b.ref_steps[i]);
  std::printf("\n");
}

void PrintShapes(int64_t n, int hidden, int vocab, bool quick) {
  int big = quick ? 128 : 2048;
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
}

}  // namespace

// The BLAS kernels avf-run asks for (run/launcher.h): OpenBLAS reads
// OPENBLAS_CORETYPE when it loads, so this process runs again with it.
void UseAvfRunBlasCore(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  std::string core = avf::cpu::BetterOpenBlasCore(avf::cpu::OpenBlasCore(), avf::cpu::CpuVectorLevel());
  if (core.empty()) return;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  execv("/proc/self/exe", argv);
}

int main(int argc, char** argv) {
  UseAvfRunBlasCore(argv);
  Args args = Parse(argc, argv);
  // --quick: a toy shape whose rows (2 x 15) and vocabulary (500) are not
  // multiples of the reference's 8-wide tiles, so the check covers those too.
  const int seq = args.quick ? 15 : 256, hidden = args.quick ? 64 : 768, vocab = args.quick ? 500 : 50257;
  avf::model::ModelConfig c{avf::model::Arch::Gpt2, args.layers, hidden, 12, 12, 4 * hidden, vocab, seq, true, 10000};
  if (args.quick) c.heads = c.kv_heads = 4;
  avf::model::Transformer<float> model(c);
  model.Initialize(1);
  avf::bench::OmpGpt2 ref(c);
  if (ref.layout().total != model.layout().total) {
    std::fprintf(stderr, "train_cpu: the reference's parameter layout differs from the model's\n");
    return 1;
  }
  const float* params = model.parameters().data();
  int64_t n = static_cast<int64_t>(args.batch) * seq;
  std::vector<uint32_t> tokens(n), targets(n);
  for (int64_t i = 0; i < n; ++i)
    tokens[i] = static_cast<uint32_t>(i * 7 % vocab), targets[i] = static_cast<uint32_t>(i * 11 % vocab);
  // Model FLOPs of a training step: 6 per parameter per token, plus attention (12 x layers x T x C per token).
  double flops_per_token = 6.0 * model.layout().total + 12.0 * c.layers * seq * hidden;
  std::printf("GPT-2 124M-shaped: %d layers, hidden %d, vocabulary %d, batch %d x seq %d (%lld parameters)\n",
              static_cast<int>(c.layers), hidden, vocab, args.batch, seq, static_cast<long long>(model.layout().total));

  Best best;
  auto ours = [&] {
    avf::cpu::ResetGemmCounters();
    Clock::time_point t = Clock::now();
    double loss = model.Forward(tokens.data(), targets.data(), args.batch, seq);
    model.ZeroGradients();
    model.Backward();
    double step = Seconds(t);
    best.ours_steps.push_back(step);
    if (step < best.ours) {
      best.ours = step, best.gemm_seconds = avf::cpu::GemmSeconds(), best.gemm_flops = avf::cpu::GemmFlops();
    }
    return loss;
  };
  auto reference = [&] {
    Clock::time_point t = Clock::now();
    ref.ZeroGradients();
    double loss = ref.Forward(params, tokens.data(), targets.data(), args.batch, seq);
    ref.Backward(params);
    best.ref_steps.push_back(Seconds(t));
    best.ref = std::min(best.ref, best.ref_steps.back());
    return loss;
  };
  // The first step of each (it warms up, untimed) is the one compared.
  double loss = ours(), ref_loss = reference();
  if (!CheckAgreement(model.layout(), loss, ref_loss, model.gradients().data(), ref.gradients().data())) return 1;
  best = Best{};
  // Interleaved, so that on a shared machine both see the same load.
  for (int s = 0; s < args.steps; ++s) ours(), reference();
  Report(best, args.steps, n, flops_per_token);
  PrintShapes(n, hidden, vocab, args.quick);
  return 0;
}
