// One full training step of the runtime's transformer on one rank, as
// avf-run's engine runs it (parallel/engine.h) without a plan around it:
// zero the gradients, forward, backward, the gradient's global norm, AdamW
// (weight decay on the matrices only, parallel::DecayedRuns) and, in bf16
// mixed precision, the fp32 master copy the optimizer updated rounded back
// into the bf16 parameters. Every phase is timed, for bench/train_cpu.
#pragma once

#include <cstdint>
#include <vector>

#include "model/transformer.h"
#include "optim/optimizer.h"

namespace avf::bench {

// batch x seq rows of token ids and of next-token targets.
struct TokenBatch {
  int64_t batch = 0, seq = 0;
  std::vector<uint32_t> tokens, targets;
};
// A fixed synthetic batch: the same every run, every precision.
auto SyntheticBatch(int64_t batch, int64_t seq, int64_t vocab) -> TokenBatch;

// Seconds of each part of the optimizer's work.
struct UpdateSeconds {
  double norm = 0, adamw = 0, round = 0;  // round: master into bf16 parameters
  auto total() const -> double { return norm + adamw + round; }
};

struct StepTimes {
  double loss = 0;
  double forward_backward = 0;  // zeroing the gradients included
  UpdateSeconds update;
  double gemm_seconds = 0, gemm_flops = 0;  // cpu::GemmSeconds, cpu::GemmFlops over the step
  auto total() const -> double { return forward_backward + update.total(); }
};

// The optimizer the bench trains with: AdamW, lr 3e-4 (constant), betas
// 0.9 / 0.95, weight decay 0.1, gradients clipped to norm 1.
auto BenchOptimizer() -> optim::OptimizerConfig;

// T is float (fp32 training: AdamW updates the parameters in place) or
// backend::Bf16 (mixed precision: AdamW updates an fp32 master copy).
template <typename T>
class FullStep {
 public:
  // `seed` is the one the model was initialized with: the master copy
  // starts from the same fp32 values (Transformer::InitialValues).
  FullStep(model::Transformer<T>& model, const optim::OptimizerConfig& config, uint64_t seed);

  // Zeroes the gradients, runs forward and backward; the mean loss.
  auto ForwardBackward(const TokenBatch& b) -> double;
  // Norm, AdamW and (bf16) rounding, on the gradients of the last backward.
  auto Update() -> UpdateSeconds;
  // Both, with the GEMM counters of the step.
  auto Run(const TokenBatch& b) -> StepTimes;

  // Bytes the optimizer holds: its two moments and, in bf16, the master copy.
  auto OptimizerBytes() const -> int64_t;

 private:
  model::Transformer<T>& model_;
  optim::AdamW adamw_;
  std::vector<float> master_;  // empty in fp32
};

}  // namespace avf::bench
