// Memory per GPU and time per step of one layout (docs/planner.md has every
// formula with its source). Pure arithmetic: no diagnostics, no allocation.
#pragma once

#include "cost/shape.h"

namespace avf::cost {

// Bytes on the most loaded GPU.
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double buffers = 0;  // communication buffers, ZeRO-3 gathered layers
  auto total() const -> double { return weights + gradients + optimizer + activations + buffers; }
};

// Seconds per step, by cause.
struct TimeBreakdown {
  double compute = 0;      // all micro-batches, at calibrated efficiency
  double tensor_comm = 0;  // tensor-parallel collectives (not overlapped)
  double pipeline_comm = 0;
  double bubble = 0;     // pipeline fill and drain
  double data_comm = 0;  // data-parallel / ZeRO traffic left exposed after overlap
  double optimizer = 0;  // the optimizer step, memory bound
  auto step() const -> double { return compute + tensor_comm + pipeline_comm + bubble + data_comm + optimizer; }
};

// Which nodes and leaves a process group covers under the default rank order.
struct GroupSpan {
  int64_t nodes = 1;
  int64_t leaves = 1;
};

struct Prediction {
  MemoryBreakdown memory;
  TimeBreakdown time;
  double memory_per_gpu = 0;  // bytes: memory.total()
  double step_time = 0;       // s: time.step()
  double tokens_per_s = 0;    // whole job
  double tflops_per_gpu = 0;  // model FLOPs (no recompute), 1e12/s
  double mfu = 0;             // model FLOPs utilisation, 0..1
  bool fits = false;          // memory.total() <= gpu_memory
  GroupSpan data_span;        // where the data-parallel ring runs
};

// Fraction of the dense tensor-core peak that a transformer's matrix
// multiplications reach in practice. Calibrated once against
// ../shared/data/published-runs.csv (docs/planner.md, "Calibration").
inline constexpr double kComputeEfficiency = 0.65;
// Narrow matrices run further from the peak: the efficiency is scaled by
// w / (w + kNarrowMatrixWidth), w = hidden / tensor, the width of the GEMMs
// each GPU runs.
inline constexpr double kNarrowMatrixWidth = 256;

// Efficiency of the matrix multiplications of one GPU.
auto ComputeEfficiency(const ModelShape& m, const Layout& l) -> double;

// Micro-batches per pipeline per step: batch / (data x micro_batch).
auto MicroBatches(const Workload& w, const Layout& l) -> int64_t;

// Megatron rank order: tensor fastest, then data, then pipeline; a group with
// `size` members `stride` ranks apart starting at rank `first`, ranks placed
// in order from node 0, leaf by leaf.
auto SpanOf(int64_t stride, int64_t size, const Hardware& hw, int64_t first = 0) -> GroupSpan;

// The widest data-parallel group of the layout (the slowest ring sets the
// pace): every pipeline stage's groups, not only the one at rank 0.
auto DataSpan(const Layout& l, const Hardware& hw) -> GroupSpan;

// The widest hop between neighbouring pipeline stages: 2 nodes (leaves) when
// any stage boundary crosses a node (leaf) boundary.
auto PipelineHopSpan(const Layout& l, const Hardware& hw) -> GroupSpan;

auto PredictMemory(const Workload& w, const Layout& l) -> MemoryBreakdown;
auto PredictTime(const Workload& w, const Layout& l, const Hardware& hw) -> TimeBreakdown;
auto Predict(const Workload& w, const Layout& l, const Hardware& hw) -> Prediction;

// Parameters held by the most loaded GPU before ZeRO sharding.
auto ParamsPerGpu(const ModelShape& m, const Layout& l) -> double;

}  // namespace avf::cost
