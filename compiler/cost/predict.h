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
  int64_t per_node = 1;  // members on one node
};

// The calibration rows a layout is compared with for its uncertainty: fully
// sharded data parallelism (ZeRO-3, FSDP), tensor or pipeline parallelism
// (Megatron-style), or plain data parallelism with ZeRO 0-2.
enum class LayoutClass : uint8_t { Sharded, ModelParallel, DataParallel };

auto ClassOf(const Layout& l) -> LayoutClass;
auto Name(LayoutClass c) -> std::string_view;

// A likely range of the step time as multiples of the prediction: the 10th
// and 90th percentiles of measured / predicted step time over the
// calibration rows of the class (calibration_bands.def, written by
// `avf-calibrate --bands`).
struct Band {
  double low = 1;
  double high = 1;
  int rows = 0;  // calibration rows behind it
};

auto StepTimeBand(LayoutClass c) -> Band;

struct Prediction {
  MemoryBreakdown memory;
  TimeBreakdown time;
  double memory_per_gpu = 0;  // bytes: memory.total()
  double step_time = 0;       // s: time.step()
  double step_time_low = 0;   // s: the likely range, StepTimeBand
  double step_time_high = 0;
  double tokens_per_s = 0;    // whole job
  double tflops_per_gpu = 0;  // model FLOPs (no recompute), 1e12/s
  double mfu = 0;             // model FLOPs utilisation, 0..1
  bool fits = false;          // memory.total() <= gpu_memory
  GroupSpan data_span;        // where the data-parallel ring runs
};

// The time model's fitted constants (docs/calibration.md). They
// were fitted once, together, over every usable row of
// ../shared/data/published-runs.csv (`avf-calibrate --fit`), never per row.
struct Calibration {
  // Fraction of the dense tensor-core peak that the matrix multiplications
  // reach: GEMMs w = hidden / tensor wide reach
  //   matmul_efficiency * (kReferenceBalance / B)^balance_exponent * w / (w + narrow_width)
  // on a GPU of B FLOP per byte of HBM bandwidth: the further its peak
  // outruns its memory, the further below the peak a training step runs.
  double matmul_efficiency = 0;
  double narrow_width = 0;
  double balance_exponent = 0;
  // Fraction of the peak the attention core (QK^T and AV, scores in on-chip
  // memory for flash) reaches: head_dim-deep products, the softmax between.
  // A flash kernel reaches
  //   attention_efficiency * (kReferenceBalance / B)^attention_balance_exponent
  // falling faster than the GEMMs: the kernels the calibration runs used keep
  // an H100's tensor cores half as busy as an A100's.
  double attention_efficiency = 0;
  double attention_balance_exponent = 0;
  // HBM bytes the memory-bound kernels (norms, activation functions, residual
  // adds, rotary embeddings, casts) move per token, layer and hidden unit,
  // forward and backward together.
  double elementwise_bytes = 0;
  // Fraction of a compute window that collectives can overlap, and the share
  // of the overlapped time they still cost (they take SMs and memory
  // bandwidth from the compute).
  double overlap = 0;
  double interference = 0;
};

inline constexpr Calibration kCalibration{
    .matmul_efficiency = 0.809,
    .narrow_width = 297,
    .balance_exponent = 0.224,
    .attention_efficiency = 0.347,
    .attention_balance_exponent = 0.960,
    .elementwise_bytes = 146.3,
    .overlap = 0.999,
    .interference = 0.828,
};

// A100 SXM: 312 TFLOP/s over 2,039 GB/s.
inline constexpr double kReferenceBalance = 153;

// Dense peak over HBM bandwidth, FLOP per byte (kReferenceBalance when the
// bandwidth is unknown).
auto MachineBalance(const Hardware& hw) -> double;

// Efficiency of the matrix multiplications of one GPU.
auto ComputeEfficiency(const ModelShape& m, const Layout& l, const Hardware& hw, const Calibration& c = kCalibration)
    -> double;

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

// One micro-batch on the busiest stage, the terms TimeBreakdown multiplies
// by the micro-batches of a step: its compute (the forward pass, then the
// backward with any recomputation), and the communication it adds.
struct MicroBatchTime {
  double forward = 0;
  double compute = 0;        // forward + backward + recomputation
  double tensor_comm = 0;    // exposed tensor-parallel collectives
  double pipeline_comm = 0;  // sends to and receives from the neighbouring stages
  double zero3_comm = 0;     // exposed ZeRO-3 gathers and reduce-scatters
  auto backward() const -> double { return compute - forward; }
  auto total() const -> double { return compute + tensor_comm + pipeline_comm + zero3_comm; }
};

auto PredictMicroBatch(const Workload& w, const Layout& l, const Hardware& hw, const Calibration& c = kCalibration)
    -> MicroBatchTime;

auto PredictMemory(const Workload& w, const Layout& l) -> MemoryBreakdown;
auto PredictTime(const Workload& w, const Layout& l, const Hardware& hw, const Calibration& c = kCalibration)
    -> TimeBreakdown;
auto Predict(const Workload& w, const Layout& l, const Hardware& hw, const Calibration& c = kCalibration) -> Prediction;

// Parameters held by the most loaded GPU before ZeRO sharding.
auto ParamsPerGpu(const ModelShape& m, const Layout& l) -> double;

}  // namespace avf::cost
