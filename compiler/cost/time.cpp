// Time per step: compute at a calibrated fraction of the dense peak, ring
// collectives over NVLink or the network (nccl-tests PERFORMANCE.md), the
// pipeline bubble (Narayanan et al. 2021) and the data-parallel reduction
// overlapped with the last micro-batch's backward pass.
#include <algorithm>
#include <cmath>

#include "cost/counts.h"
#include "cost/predict.h"
#include "cost/stages.h"

namespace avf::cost {

namespace {

auto D(int64_t v) -> double { return static_cast<double>(v); }

auto ActivationBytes(Precision p) -> double { return p == Precision::Fp32 ? 4 : 2; }

struct Link {
  double bandwidth = 1;  // bytes/s per GPU
  double latency = 0;    // s per ring step
};

// The link a group's ring runs over: NVLink inside a node; across nodes, the
// GPU's share of the node's NICs times the group's members on a node (a ring
// leaves each node once: the node's k members, run in G/k concurrent groups,
// share its NICs), capped by NVLink and cut by the oversubscription when the
// ring leaves its leaf switch.
auto LinkFor(const GroupSpan& span, const Hardware& hw) -> Link {
  if (span.nodes <= 1) return {hw.nvlink_bandwidth, hw.nvlink_latency};
  double nics = D(std::max<int64_t>(hw.nics_per_node, 1));
  double share = hw.nic_bandwidth * nics / D(std::max<int64_t>(hw.gpus_per_node, 1)) * D(span.per_node);
  double bw = hw.nvlink_bandwidth > 0 ? std::min(share, hw.nvlink_bandwidth) : share;
  if (span.leaves > 1) bw /= std::max(1.0, hw.oversubscription);
  return {bw, hw.network_latency};
}

auto AllReduce(double bytes, int64_t n, const Link& link) -> double {
  if (n <= 1) return 0;
  double steps = D(n - 1);
  return 2.0 * steps / D(n) * bytes / link.bandwidth + 2.0 * steps * link.latency;
}

// Reduce-scatter or all-gather of a `bytes`-sized buffer.
auto HalfRing(double bytes, int64_t n, const Link& link) -> double {
  if (n <= 1) return 0;
  double steps = D(n - 1);
  return steps / D(n) * bytes / link.bandwidth + steps * link.latency;
}

// Seconds one GPU of the busiest (last) stage computes for one micro-batch.
struct MicroBatchWork {
  double forward = 0;
  double total = 0;  // forward + backward + recomputation
};

// Per token and layer, on one GPU: the block's matrix multiplications (FLOPs),
// the attention core (FLOPs it executes) and the memory-bound kernels (bytes),
// forward pass only.
struct LayerCost {
  double matmul = 0;
  double attention = 0;
  double memory = 0;
};

// Korthikanti's split: 10 of 34 bytes of a layer's activations are what plain
// tensor parallelism leaves replicated (norm inputs, residuals); sequence
// parallelism splits them too.
constexpr double kReplicatedShare = 10.0 / 34.0;
// Bytes per token and vocabulary entry of the output layer's memory-bound work:
// fp32 logits written, read by the softmax's max and sum, gradient written.
constexpr double kLogitBytes = 16;
// FlashAttention's backward rebuilds the scores (QK^T) before the four
// products of the plain backward: 5 units of forward-product work, against 4.
constexpr double kFlashBackwardUnits = 2.5;

auto LayerForward(const Workload& w, const Layout& l, const Calibration& c) -> LayerCost {
  const ModelShape& m = w.model;
  ParamCounts counts = CountParams(m);
  double t = D(l.tensor);
  LayerCost cost;
  cost.matmul = 2.0 * D(counts.layer_matmul) / t;
  // Causal: FlashAttention skips the blocks above the diagonal, a plain
  // implementation multiplies the whole s x s matrix and masks it.
  double core = AttentionFlopsPerTokenLayer(m) / t;
  cost.attention = w.attention == Attention::Flash ? core / 2 : core;
  double spread = l.sequence_parallel ? 1.0 / t : kReplicatedShare + (1 - kReplicatedShare) / t;
  // Forward share of the fitted forward+backward traffic: a third, like the FLOPs.
  double element = w.fp32_elementwise ? 4.0 : ActivationBytes(w.precision);
  cost.memory = c.elementwise_bytes / 3.0 * D(m.hidden) * spread * element / 2;
  if (w.attention == Attention::Materialized) {
    // Scores written, read by the softmax, probabilities written (16-bit).
    cost.memory += 6.0 * D(m.heads) / t * D(m.seq_len);
  }
  return cost;
}

// `most`: the most layers any stage holds (MaxStageLayers).
auto StageWork(const Workload& w, const Layout& l, const Hardware& hw, double most, const Calibration& c)
    -> MicroBatchWork {
  const ModelShape& m = w.model;
  double tokens = D(l.micro_batch) * D(m.seq_len);
  LayerCost layer = LayerForward(w, l, c);
  double matmul_rate = hw.peak_flops * ComputeEfficiency(m, l, hw, c);
  // A flash kernel runs at its own fitted rate; materialized attention is
  // two batched GEMMs with the softmax between (its traffic is in memory).
  double attention_rate = w.attention == Attention::Flash
                              ? hw.peak_flops * c.attention_efficiency *
                                    std::pow(kReferenceBalance / MachineBalance(hw), c.attention_balance_exponent)
                              : matmul_rate;
  double bandwidth = hw.hbm_bandwidth > 0 ? hw.hbm_bandwidth : 1e30;
  double matmul_s = layer.matmul / matmul_rate;
  double attention_s = layer.attention / attention_rate;
  double memory_s = layer.memory / bandwidth;
  double logits_s = 2.0 * D(m.vocab) * D(m.hidden) / D(l.tensor) / matmul_rate;
  double logits_memory_s = kLogitBytes * D(m.vocab) / D(l.tensor) / bandwidth;

  double backward_attention = w.attention == Attention::Flash ? kFlashBackwardUnits : 2.0;
  double layer_forward = matmul_s + attention_s + memory_s;
  double layer_backward = 2 * matmul_s + backward_attention * attention_s + 2 * memory_s;
  double layer_recompute = 0;
  if (l.recompute == Recompute::Full) layer_recompute = layer_forward;
  // Selective recomputation rebuilds the stored attention core; a flash
  // kernel stores none, so there is nothing to rebuild.
  if (l.recompute == Recompute::Selective && w.attention == Attention::Materialized) layer_recompute = attention_s;
  double logits_forward = logits_s + logits_memory_s / 3;
  double logits_backward = 2 * logits_s + 2 * logits_memory_s / 3;

  // The slowest stage sets the pace: the last (its layers and the logits)
  // or, when the split is uneven, one with more layers.
  double per_layer = layer_forward + layer_backward + layer_recompute;
  double last = D(StageLayers(m.layers, l.pipeline, ChunksPerStage(l), l.pipeline - 1));
  bool last_paces = last * per_layer + logits_forward + logits_backward >= most * per_layer;
  double layers = last_paces ? last : most;
  double logits = last_paces ? 1.0 : 0.0;
  MicroBatchWork work;
  work.forward = tokens * (layers * layer_forward + logits * logits_forward);
  work.total = tokens * (layers * per_layer + logits * (logits_forward + logits_backward));
  return work;
}

// Tensor-parallel collectives of one micro-batch on one stage: two all-reduces
// (or reduce-scatter + all-gather pairs under sequence parallelism, the same
// bytes) forward and two backward per layer; full recomputation repeats the
// forward pair.
auto TensorComm(const Workload& w, const Layout& l, const Hardware& hw, double layers) -> double {
  if (l.tensor <= 1) return 0;
  const ModelShape& m = w.model;
  double bytes = D(l.micro_batch) * D(m.seq_len) * D(m.hidden) * ActivationBytes(w.precision);
  double per_layer = l.recompute == Recompute::Full ? 6.0 : 4.0;
  Link link = LinkFor(SpanOf(1, l.tensor, hw), hw);
  return layers * per_layer * AllReduce(bytes, l.tensor, link);
}

// Activations forward and gradients backward across each stage boundary,
// once per model chunk; split over the tensor group (Megatron scatter/gather).
auto PipelineComm(const Workload& w, const Layout& l, const Hardware& hw) -> double {
  if (l.pipeline <= 1) return 0;
  const ModelShape& m = w.model;
  double bytes = D(l.micro_batch) * D(m.seq_len) * D(m.hidden) * ActivationBytes(w.precision) / D(l.tensor);
  Link link = LinkFor(PipelineHopSpan(l, hw), hw);
  double chunks = l.schedule == Schedule::Interleaved ? D(l.virtual_stages) : 1.0;
  return 2.0 * chunks * (bytes / link.bandwidth + link.latency);
}

// Bytes per parameter of the optimizer step: moments and fp32 master
// weights read and written, the gradient read, the 16-bit copy written.
auto OptimizerTraffic(const Workload& w) -> double {
  double moments = w.optimizer == OptimizerKind::AdamW ? 16 : 8;
  double master = w.precision == Precision::Fp32 ? 8 : 8 + 2;
  double gradient = w.precision == Precision::Fp32 ? 4 : 2;
  return moments + master + gradient;
}

// Seconds a collective of `comm` seconds adds to a compute window of `window`
// seconds that it overlaps: what `overlap` of the window cannot hide, and
// `interference` of what it hides (the collective takes SMs and memory
// bandwidth from the compute).
auto Exposed(double comm, double window, const Calibration& c) -> double {
  double hidden = std::min(comm, c.overlap * window);
  return comm - hidden + c.interference * hidden;
}

// Bytes of one data-parallel collective over a stage's parameters.
struct CommBytes {
  double parameters = 0;  // gathered at the training precision
  double gradients = 0;   // reduced at the training precision or fp32
};

auto GradientBytes(const Workload& w, const Layout& l) -> CommBytes {
  double params = ParamsPerGpu(w.model, l);
  CommBytes bytes;
  bytes.parameters = params * (w.precision == Precision::Fp32 ? 4 : 2);
  bytes.gradients = w.reduce_in_fp32 ? params * 4 : bytes.parameters;
  return bytes;
}

// Gradients are reduced while a backward pass runs: once per
// step, in the last micro-batch, for ZeRO-0/1 (which keep a whole gradient
// buffer); after every micro-batch for ZeRO-2, whose gradient shard cannot
// accumulate the other ranks' parts. ZeRO-1/2 split the all-reduce into that
// reduce-scatter and an all-gather of the updated parameters (`param_bytes`)
// that the next step's first forward pass hides. A window of compute hides
// `overlap` of its length.
auto ExposedGradientSync(const Workload& w, const Layout& l, int64_t micro_batches, const CommBytes& bytes,
                         const Link& link, const MicroBatchWork& work, const Calibration& c) -> double {
  if (l.data <= 1) return 0;
  double backward_window = w.overlap_data_comm ? work.total - work.forward : 0.0;
  double forward_window = w.overlap_data_comm ? work.forward : 0.0;
  if (l.zero == 0) return Exposed(AllReduce(bytes.gradients, l.data, link), backward_window, c);
  double scatters = l.zero == 2 ? D(micro_batches) : 1.0;
  double scatter = HalfRing(bytes.gradients, l.data, link);
  double gather = HalfRing(bytes.parameters, l.data, link);
  return scatters * Exposed(scatter, backward_window, c) + Exposed(gather, forward_window, c);
}

// ZeRO-3 gathers the parameters before each micro-batch's forward and again
// before its backward, and reduce-scatters its gradients, one collective per
// layer each (each pays the ring's latency). Prefetching runs them during the
// compute, which hides `overlap` of its length.
auto ExposedZero3(const Layout& l, double layers, const CommBytes& bytes, const Link& link, const MicroBatchWork& work,
                  const Calibration& c) -> double {
  if (l.zero < 3 || l.data <= 1) return 0;
  double latency = layers * D(l.data - 1) * link.latency;
  double gathers = 2 * (HalfRing(bytes.parameters, l.data, link) + latency);
  double scatter = HalfRing(bytes.gradients, l.data, link) + latency;
  return Exposed(gathers + scatter, work.total, c);
}

}  // namespace

auto MachineBalance(const Hardware& hw) -> double {
  return hw.hbm_bandwidth > 0 ? hw.peak_flops / hw.hbm_bandwidth : kReferenceBalance;
}

auto ComputeEfficiency(const ModelShape& m, const Layout& l, const Hardware& hw, const Calibration& c) -> double {
  double width = D(m.hidden) / D(l.tensor);
  double ceiling = c.matmul_efficiency * std::pow(kReferenceBalance / MachineBalance(hw), c.balance_exponent);
  return ceiling * width / (width + c.narrow_width);
}

auto SpanOf(int64_t stride, int64_t size, const Hardware& hw, int64_t first) -> GroupSpan {
  int64_t g = std::max<int64_t>(hw.gpus_per_node, 1);
  int64_t first_node = first / g;
  int64_t last_node = (first + (size - 1) * stride) / g;
  GroupSpan span;
  span.nodes = stride >= g ? size : last_node - first_node + 1;
  span.per_node = stride >= g ? 1 : std::min(size, g / stride);
  if (hw.nodes_per_leaf <= 0) return span;
  span.leaves = std::min(span.nodes, last_node / hw.nodes_per_leaf - first_node / hw.nodes_per_leaf + 1);
  return span;
}

auto DataSpan(const Layout& l, const Hardware& hw) -> GroupSpan {
  GroupSpan widest;
  // Within a stage the groups differ only by the tensor offset; the first and
  // the last offset bound the others.
  for (int64_t stage = 0; stage < l.pipeline; ++stage) {
    for (int64_t offset : {int64_t{0}, l.tensor - 1}) {
      GroupSpan s = SpanOf(l.tensor, l.data, hw, stage * l.tensor * l.data + offset);
      if (s.leaves > widest.leaves || (s.leaves == widest.leaves && s.nodes > widest.nodes)) widest = s;
    }
  }
  return widest;
}

auto PipelineHopSpan(const Layout& l, const Hardware& hw) -> GroupSpan {
  GroupSpan span;
  if (l.pipeline <= 1) return span;
  // Ranks fill nodes in order, so some hop crosses a node boundary exactly
  // when the job has more ranks than one node (and likewise for a leaf).
  int64_t g = std::max<int64_t>(hw.gpus_per_node, 1);
  if (l.world() > g) span.nodes = 2;
  if (hw.nodes_per_leaf > 0 && l.world() > g * hw.nodes_per_leaf) span.leaves = 2;
  return span;
}

namespace {

auto MicroBatchWithSpan(const Workload& w, const Layout& l, const Hardware& hw, const GroupSpan& data_span,
                        const Calibration& c) -> MicroBatchTime {
  // The busiest stage's layers: every per-layer term is paid that many times.
  double most = D(MaxStageLayers(w.model.layers, l.pipeline, ChunksPerStage(l)));
  MicroBatchWork work = StageWork(w, l, hw, most, c);
  MicroBatchTime mb;
  mb.forward = work.forward;
  mb.compute = work.total;
  mb.tensor_comm = TensorComm(w, l, hw, most);
  if (w.overlap_tensor_comm) mb.tensor_comm = Exposed(mb.tensor_comm, work.total, c);
  mb.pipeline_comm = PipelineComm(w, l, hw);
  mb.zero3_comm = ExposedZero3(l, most, GradientBytes(w, l), LinkFor(data_span, hw), work, c);
  return mb;
}

// PredictTime with the data-parallel span already known (Predict reports the
// span too, and walking every stage's groups twice per candidate is waste).
auto TimeWithSpan(const Workload& w, const Layout& l, const Hardware& hw, const GroupSpan& data_span,
                  const Calibration& c) -> TimeBreakdown {
  TimeBreakdown t;
  int64_t m = MicroBatches(w, l);
  MicroBatchTime mb = MicroBatchWithSpan(w, l, hw, data_span, c);
  double per_mb = mb.total();
  t.compute = D(m) * mb.compute;
  t.tensor_comm = D(m) * mb.tensor_comm;
  t.pipeline_comm = D(m) * mb.pipeline_comm;
  double v = l.schedule == Schedule::Interleaved ? D(l.virtual_stages) : 1.0;
  t.bubble = D(l.pipeline - 1) / v * per_mb;
  t.data_comm = D(m) * mb.zero3_comm;
  double params = ParamsPerGpu(w.model, l);
  if (l.zero < 3) {
    MicroBatchWork work{mb.forward, mb.compute};
    t.data_comm += ExposedGradientSync(w, l, m, GradientBytes(w, l), LinkFor(data_span, hw), work, c);
  }
  double owned = l.zero >= 1 ? params / D(l.data) : params;
  t.optimizer = hw.hbm_bandwidth > 0 ? owned * OptimizerTraffic(w) / hw.hbm_bandwidth : 0;
  return t;
}

}  // namespace

auto PredictMicroBatch(const Workload& w, const Layout& l, const Hardware& hw, const Calibration& c) -> MicroBatchTime {
  return MicroBatchWithSpan(w, l, hw, DataSpan(l, hw), c);
}

auto PredictTime(const Workload& w, const Layout& l, const Hardware& hw, const Calibration& c) -> TimeBreakdown {
  return TimeWithSpan(w, l, hw, DataSpan(l, hw), c);
}

auto ClassOf(const Layout& l) -> LayoutClass {
  if (l.zero >= 3 && l.data > 1) return LayoutClass::Sharded;
  if (l.tensor > 1 || l.pipeline > 1) return LayoutClass::ModelParallel;
  return LayoutClass::DataParallel;
}

auto StepTimeBand(LayoutClass c) -> Band {
  // clang-format off
  switch (c) {
#define CALIBRATION_BAND(Class, Low, High, Rows) case LayoutClass::Class: return Band{Low, High, Rows};
#include "cost/calibration_bands.def"
  }
  // clang-format on
  return Band{};
}

auto Predict(const Workload& w, const Layout& l, const Hardware& hw, const Calibration& c) -> Prediction {
  Prediction p;
  p.data_span = DataSpan(l, hw);
  p.memory = PredictMemory(w, l);
  p.memory_per_gpu = p.memory.total();
  p.time = TimeWithSpan(w, l, hw, p.data_span, c);
  p.step_time = p.time.step();
  Band band = StepTimeBand(ClassOf(l));
  p.step_time_low = p.step_time * band.low;
  p.step_time_high = p.step_time * band.high;
  double tokens = D(w.global_batch) * D(w.model.seq_len);
  p.tokens_per_s = p.step_time > 0 ? tokens / p.step_time : 0;
  double flops = ModelFlopsPerToken(w.model) * p.tokens_per_s / D(std::max<int64_t>(w.gpus, 1));
  p.tflops_per_gpu = flops / 1e12;
  p.mfu = hw.peak_flops > 0 ? flops / hw.peak_flops : 0;
  p.fits = p.memory.total() <= hw.gpu_memory;
  return p;
}

}  // namespace avf::cost
