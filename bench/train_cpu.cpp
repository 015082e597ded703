// train_cpu: the CPU training step on GPT-2 124M-shaped layers (hidden 768,
// 12 heads, MLP 3072, vocabulary 50,257) at sequence length 256, in fp32 or
// bf16 mixed precision. The timed step is a FULL training step
// (bench/train_step.h): zero the gradients, forward, backward, the global
// gradient norm, AdamW and, in bf16, the fp32 master copy rounded back into
// the bf16 parameters. It prints the machine (CPU, cores, the flags that
// decide the GEMM kernels), tokens/s and model FLOP/s (6 x parameters x
// tokens plus attention), the split of the step (forward + backward,
// optimizer), the share of it spent in GEMMs, the peak RSS next to what the
// model and the optimizer account for, and each GEMM shape's FLOP/s next to
// the GEMM's own peak (a large square GEMM). It asserts no timing.
//
// fp32: next to a straightforward OpenMP fp32 reference of the same model
// (bench/omp_reference.h, in the style of llm.c's train_gpt2.c; forward and
// backward only, no optimizer) on the same parameters and batch: the first
// forward and backward of each must agree (exit status 1 otherwise); then
// our full step and the reference's forward + backward are timed, interleaved.
// bf16: the first step's loss against the fp32 model's on the same batch
// (exit status 1 above a relative 2%).
//   train_cpu [--precision fp32|bf16] [--layers N (12)] [--batch B (4)] [--steps S (3)] [--quick]
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/blas_core.h"
#include "cpu/gemm.h"
#include "machine_info.h"
#include "model/transformer.h"
#include "omp_reference.h"
#include "train_step.h"

namespace {

using Clock = std::chrono::steady_clock;
using avf::backend::Bf16;
using avf::bench::StepTimes;
using avf::bench::TokenBatch;
using avf::model::ParamLayout;

// Agreement limits with the reference: the loss within a relative 1e-4, and
// in every parameter tensor max |ours - reference| / max |ours| below 1e-3.
constexpr double kLossTolerance = 1e-4, kGradTolerance = 1e-3;
// bf16's first loss against fp32's: well under 1% expected.
constexpr double kBf16LossTolerance = 0.02;
constexpr double kMiB = 1024.0 * 1024.0;

auto Seconds(Clock::time_point since) -> double { return std::chrono::duration<double>(Clock::now() - since).count(); }

struct Args {
  int layers = 12, batch = 4, steps = 3;
  bool quick = false;
  std::string precision = "fp32";
};

constexpr const char* kUsage =
    "usage: train_cpu [--precision fp32|bf16] [--layers N] [--batch B] [--steps S] [--quick]";

[[noreturn]] void Usage(const std::string& problem) {
  std::fprintf(stderr, "train_cpu: %s\n%s\n", problem.c_str(), kUsage);
  std::exit(2);
}

// A count from 1 to 1000 for `flag`.
auto CountOf(const char* flag, const char* text) -> int {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > 1000) {
    Usage(std::string(flag) + " takes a whole number from 1 to 1000, not '" + text + "'");
  }
  return static_cast<int>(value);
}

auto Parse(int argc, char** argv) -> Args {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    bool takes_value = s == "--layers" || s == "--batch" || s == "--steps" || s == "--precision";
    if (takes_value && i + 1 >= argc) Usage(s + " needs a value");
    if (s == "--layers") a.layers = CountOf("--layers", argv[++i]);
    else if (s == "--batch") a.batch = CountOf("--batch", argv[++i]);
    else if (s == "--steps") a.steps = CountOf("--steps", argv[++i]);
    else if (s == "--precision") a.precision = argv[++i];
    else if (s == "--quick") a.quick = true;
    else Usage("unknown argument '" + s + "'");
  }
  if (a.precision != "fp32" && a.precision != "bf16") Usage("--precision is fp32 or bf16, not '" + a.precision + "'");
  if (a.quick) a.layers = 2, a.batch = 2, a.steps = 1;
  return a;
}

// The model, the batch and the model FLOPs of one step.
struct Workload {
  avf::model::ModelConfig config;
  TokenBatch batch;
  double flops_per_token = 0;
  auto tokens() const -> double { return static_cast<double>(batch.batch * batch.seq); }
};

// --quick: a toy shape whose rows (2 x 15) and vocabulary (500) are not
// multiples of the reference's 8-wide tiles, so the check covers those too.
auto WorkloadOf(const Args& args) -> Workload {
  const int seq = args.quick ? 15 : 256, hidden = args.quick ? 64 : 768, vocab = args.quick ? 500 : 50257;
  Workload w;
  w.config = {avf::model::Arch::Gpt2, args.layers, hidden, 12, 12, 4 * hidden, vocab, seq, true, 10000};
  if (args.quick) w.config.heads = w.config.kv_heads = 4;
  w.batch = avf::bench::SyntheticBatch(args.batch, seq, vocab);
  // Model FLOPs of a training step: 6 per parameter per token, plus attention (12 x layers x T x C per token).
  w.flops_per_token = 6.0 * static_cast<double>(avf::model::LayoutOf(w.config).total) +
                      12.0 * static_cast<double>(w.config.layers * seq * hidden);
  return w;
}

// FLOP/s of one GEMM shape through the runtime's GEMM (cpu/gemm.h) on
// elements T (bf16: bf16 operands and output, fp32 accumulation), the best of
// a few runs.
template <typename T>
auto GemmRate(int64_t m, int64_t n, int64_t k, bool tb, int runs) -> double {
  std::vector<T> a(static_cast<size_t>(m * k), avf::backend::Narrow<T>(0.5f)),
      b(static_cast<size_t>(k * n), avf::backend::Narrow<T>(0.25f)), c(static_cast<size_t>(m * n));
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    Clock::time_point t = Clock::now();
    avf::cpu::detail::Gemm(false, tb, m, n, k, 1.0f, a.data(), k, b.data(), tb ? k : n, 0.0f, c.data(), n);
    best = std::min(best, Seconds(t));
  }
  return 2.0 * static_cast<double>(m * n * k) / best;
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

// Prints the agreement of one forward and backward of each; false when it is outside the limits.
auto CheckAgreement(const ParamLayout& layout, double loss, double ref_loss, const float* grads, const float* ref_grads)
    -> bool {
  double loss_rel = std::fabs(loss - ref_loss) / std::max(std::fabs(ref_loss), 1e-30);
  GradAgreement g = CompareGradients(layout, grads, ref_grads);
  bool ok = loss_rel < kLossTolerance && g.worst < kGradTolerance;
  std::printf("agreement with the OpenMP reference (same parameters and batch, one forward and backward): %s\n",
              ok ? "ok" : "FAILED");
  std::printf("  loss %.6f (ours) vs %.6f (reference): relative %.2e, limit %.0e\n", loss, ref_loss, loss_rel,
              kLossTolerance);
  std::printf("  gradients, %zu tensors: worst max|diff|/max|grad| %.2e (%s), limit %.0e\n", layout.tensors.size(),
              g.worst, g.tensor.c_str(), kGradTolerance);
  return ok;
}

void PrintMachine() {
  avf::bench::MachineInfo m = avf::bench::DescribeMachine();
  std::printf("machine: %s, %d cores;", m.cpu.c_str(), m.cores);
  for (const char* flag : {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}) {
    std::printf(" %s %s", flag, m.Has(flag) ? "yes" : "no");
  }
  std::printf("\n");
  std::printf("  GEMMs: %s; OpenMP %d threads\n", avf::cpu::GemmPath().c_str(), avf::bench::OmpGpt2::Threads());
}

auto BestStep(const std::vector<StepTimes>& steps) -> StepTimes {
  return *std::min_element(steps.begin(), steps.end(),
                           [](const StepTimes& a, const StepTimes& b) { return a.total() < b.total(); });
}

// Prints our steps; returns the model FLOP/s of the best one.
auto ReportOurs(const std::vector<StepTimes>& steps, const Workload& w, const std::string& precision,
                const avf::bench::OtherLoad& load) -> double {
  StepTimes b = BestStep(steps);
  double total = b.total();
  std::printf("ours (full step, %s): best of %zu steps %.3f s, %.0f tokens/s, %.2f GFLOP/s model\n", precision.c_str(),
              steps.size(), total, w.tokens() / total, w.flops_per_token * w.tokens() / total / 1e9);
  std::printf("  forward+backward %.3f s (%.1f%%), optimizer %.3f s (%.1f%%: gradient norm %.3f s, AdamW %.3f s",
              b.forward_backward, 100 * b.forward_backward / total, b.update.total(), 100 * b.update.total() / total,
              b.update.norm, b.update.adamw);
  if (precision == "bf16") std::printf(", master rounded into the bf16 parameters %.3f s", b.update.round);
  std::printf(")\n");
  std::printf("  time in GEMMs: %.1f%% of the step (%.1f%% of forward+backward), at %.2f GFLOP/s\n",
              100 * b.gemm_seconds / total, 100 * b.gemm_seconds / b.forward_backward,
              b.gemm_flops / b.gemm_seconds / 1e9);
  std::printf("  every step, total = forward+backward + optimizer (s):");
  for (const StepTimes& s : steps) std::printf(" %.2f = %.2f + %.2f", s.total(), s.forward_backward, s.update.total());
  std::printf("\n  other processes kept %.2f cores busy on average while the steps ran\n", load.CoresSinceStart());
  return w.flops_per_token * w.tokens() / total;
}

// The reference's forward and backward (it has no optimizer), against ours.
void ReportReference(const std::vector<double>& ref_steps, const std::vector<StepTimes>& ours, const Workload& w) {
  double ref = *std::min_element(ref_steps.begin(), ref_steps.end());
  std::printf(
      "reference forward+backward only, no optimizer (bench/omp_reference.cpp, %d OpenMP threads): best of %zu "
      "steps %.3f s, %.0f tokens/s, %.2f GFLOP/s model\n",
      avf::bench::OmpGpt2::Threads(), ref_steps.size(), ref, w.tokens() / ref,
      w.flops_per_token * w.tokens() / ref / 1e9);
  double fb = 1e30;
  for (const StepTimes& s : ours) fb = std::min(fb, s.forward_backward);
  std::printf("ours / reference: %.2fx the tokens/s on forward+backward alone; our full step %.2fx\n", ref / fb,
              ref / BestStep(ours).total());
  std::printf("  every step, reference forward+backward (s):");
  for (double s : ref_steps) std::printf(" %.2f", s);
  std::printf("\n");
}

// What the rank accounts for: the model's buffers (Transformer::Memory) and
// the optimizer's.
struct Accounted {
  int64_t parameters = 0, gradients = 0, activations = 0, scratch = 0, optimizer = 0;
  bool master = false;  // the optimizer's bytes include an fp32 master copy
  auto total() const -> int64_t { return parameters + gradients + activations + scratch + optimizer; }
};

template <typename T>
auto AccountedOf(const avf::model::Transformer<T>& model, const avf::bench::FullStep<T>& step) -> Accounted {
  auto m = model.Memory();
  return {m.parameters, m.gradients, m.activations, m.scratch, step.OptimizerBytes(), std::is_same_v<T, Bf16>};
}

void ReportMemory(const Accounted& a, int64_t peak, const char* peak_covers) {
  double limit = 1.15 * static_cast<double>(a.total()) + 300 * kMiB;
  std::printf(
      "memory: peak RSS %.0f MiB (%s) vs %.0f MiB accounted: parameters %.0f, gradients %.0f, activations %.0f, "
      "scratch %.0f, optimizer moments%s %.0f MiB\n",
      static_cast<double>(peak) / kMiB, peak_covers, static_cast<double>(a.total()) / kMiB, a.parameters / kMiB,
      a.gradients / kMiB, a.activations / kMiB, a.scratch / kMiB, a.master ? " and master" : "", a.optimizer / kMiB);
  std::printf("  peak / accounted %.2fx; target at most 1.15 x accounted + 300 MiB = %.0f MiB: %s\n",
              static_cast<double>(peak) / static_cast<double>(a.total()), limit / kMiB,
              peak < 0                             ? "peak unknown"
              : static_cast<double>(peak) <= limit ? "within"
                                                   : "OVER");
}

// Each GEMM shape of a layer and the LM head at the precision's element
// type, next to the GEMM's peak (and, in bf16, the sgemm peak too).
// The peaks of a large square GEMM (FLOP/s): sgemm, and the precision's own.
struct Peaks {
  double sgemm = 0, own = 0;
};

template <typename T>
auto PrintShapes(int64_t n, int64_t hidden, int64_t vocab, bool quick) -> Peaks {
  int64_t big = quick ? 128 : 2048;
  double sgemm_peak = GemmRate<float>(big, big, big, false, 5), peak = sgemm_peak;
  std::printf("SGEMM peak (sgemm %lld^3): %.2f GFLOP/s\n", static_cast<long long>(big), sgemm_peak / 1e9);
  if constexpr (std::is_same_v<T, Bf16>) {
    peak = GemmRate<Bf16>(big, big, big, false, 5);
    std::printf("bf16 GEMM peak (runtime's bf16 GEMM, fp32 accumulation, %lld^3): %.2f GFLOP/s\n",
                static_cast<long long>(big), peak / 1e9);
  }
  struct Shape {
    const char* what;
    int64_t m, n, k;
  } shapes[] = {{"qkv (forward)", n, 3 * hidden, hidden},
                {"mlp fc (forward)", n, 4 * hidden, hidden},
                {"mlp proj (forward)", n, hidden, 4 * hidden},
                {"lm head (forward)", n, vocab, hidden}};
  for (const Shape& s : shapes) {
    double rate = GemmRate<T>(s.m, s.n, s.k, true, 3);
    std::printf("  %-20s %5lld x %5lld x %5lld: %7.2f GFLOP/s, %5.1f%% of peak\n", s.what, static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), rate / 1e9, 100 * rate / peak);
  }
  return {sgemm_peak, peak};
}

auto ReferenceForwardBackward(avf::bench::OmpGpt2& ref, const float* params, const TokenBatch& b) -> double {
  ref.ZeroGradients();
  double loss = ref.Forward(params, b.tokens.data(), b.targets.data(), b.batch, b.seq);
  ref.Backward(params);
  return loss;
}

// The exit status (0: the check passed) and our best step's model FLOP/s.
struct RunResult {
  int rc = 0;
  double model_flops = 0;
};

// fp32: agreement with the reference, then our full step and the
// reference's forward + backward timed, interleaved so that on a shared
// machine both see the same load; then the reference is freed and one more
// step of ours alone gives the peak RSS.
auto RunFp32(const Args& args, const Workload& w) -> RunResult {
  avf::model::Transformer<float> model(w.config);
  model.Initialize(1);
  auto ref = std::make_unique<avf::bench::OmpGpt2>(w.config);
  if (ref->layout().total != model.layout().total) {
    std::fprintf(stderr, "train_cpu: the reference's parameter layout differs from the model's\n");
    return {1};
  }
  avf::bench::FullStep<float> step(model, avf::bench::BenchOptimizer(), 1);
  const float* params = model.parameters().data();
  // The first forward and backward of each (it warms up, untimed) is the one compared.
  double loss = step.ForwardBackward(w.batch), ref_loss = ReferenceForwardBackward(*ref, params, w.batch);
  if (!CheckAgreement(model.layout(), loss, ref_loss, model.gradients().data(), ref->gradients().data())) return {1};
  step.Update();  // untimed too: the optimizer's moments are touched the first time
  std::vector<StepTimes> ours;
  std::vector<double> ref_steps;
  avf::bench::OtherLoad load;
  for (int s = 0; s < args.steps; ++s) {
    ours.push_back(step.Run(w.batch));
    Clock::time_point t = Clock::now();
    ReferenceForwardBackward(*ref, params, w.batch);
    ref_steps.push_back(Seconds(t));
  }
  double model_flops = ReportOurs(ours, w, "fp32", load);
  ReportReference(ref_steps, ours, w);
  int64_t with_reference = avf::bench::PeakRssBytes();
  ref.reset();
  bool reset = avf::bench::ResetPeakRss();
  StepTimes alone = step.Run(w.batch);
  std::printf("one more full step of ours, the reference freed: %.3f s\n", alone.total());
  ReportMemory(AccountedOf(model, step), avf::bench::PeakRssBytes(),
               reset ? "over that step and after" : "the whole run, the reference's memory included");
  std::printf("  (the whole run's peak, the reference included: %.0f MiB)\n",
              static_cast<double>(with_reference) / kMiB);
  return {0, model_flops};
}

// The fp32 model's loss on the batch, from the same initial values.
auto Fp32Loss(const Workload& w) -> double {
  avf::model::Transformer<float> model(w.config);
  model.Initialize(1);
  return model.Forward(w.batch.tokens.data(), w.batch.targets.data(), w.batch.batch, w.batch.seq);
}

// bf16: the first full step (untimed) gives the loss to compare; the timed
// steps and the peak RSS before the fp32 model is built for the comparison.
auto RunBf16(const Args& args, const Workload& w) -> RunResult {
  avf::model::Transformer<Bf16> model(w.config);
  model.Initialize(1);
  avf::bench::FullStep<Bf16> step(model, avf::bench::BenchOptimizer(), 1);
  double loss = step.Run(w.batch).loss;
  std::vector<StepTimes> ours;
  avf::bench::OtherLoad load;
  for (int s = 0; s < args.steps; ++s) ours.push_back(step.Run(w.batch));
  double model_flops = ReportOurs(ours, w, "bf16", load);
  ReportMemory(AccountedOf(model, step), avf::bench::PeakRssBytes(), "the whole run");
  double fp32 = Fp32Loss(w), rel = std::fabs(loss - fp32) / std::max(std::fabs(fp32), 1e-30);
  bool ok = rel <= kBf16LossTolerance;
  std::printf(
      "first step's loss, bf16 vs fp32 (same initial values and batch): %.6f vs %.6f, relative %.2e, "
      "limit %.0e: %s\n",
      loss, fp32, rel, kBf16LossTolerance, ok ? "ok" : "FAILED");
  return {ok ? 0 : 1, model_flops};
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
  Workload w = WorkloadOf(args);
  const avf::model::ModelConfig& c = w.config;
  PrintMachine();
  std::printf(
      "GPT-2 124M-shaped, %s: %lld layers, hidden %lld, vocabulary %lld, batch %d x seq %lld (%lld parameters)\n",
      args.precision.c_str(), static_cast<long long>(c.layers), static_cast<long long>(c.hidden),
      static_cast<long long>(c.vocab), args.batch, static_cast<long long>(c.seq_len),
      static_cast<long long>(avf::model::LayoutOf(c).total));
  bool bf16 = args.precision == "bf16";
  RunResult run = bf16 ? RunBf16(args, w) : RunFp32(args, w);
  if (run.rc != 0) return run.rc;
  auto rows = static_cast<int64_t>(w.tokens());
  Peaks peaks = bf16 ? PrintShapes<Bf16>(rows, c.hidden, c.vocab, args.quick)
                     : PrintShapes<float>(rows, c.hidden, c.vocab, args.quick);
  std::printf("our full step's model FLOP/s: %.1f%% of the SGEMM peak", 100 * run.model_flops / peaks.sgemm);
  if (bf16) std::printf(", %.1f%% of the bf16 GEMM peak", 100 * run.model_flops / peaks.own);
  std::printf("\n");
  return 0;
}
