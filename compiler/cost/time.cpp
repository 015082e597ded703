// Time per step: compute at a calibrated fraction of the dense peak, ring
// collectives over NVLink or the network (nccl-tests PERFORMANCE.md), the
// pipeline bubble (Narayanan et al. 2021) and the data-parallel reduction
// overlapped with the last micro-batch's backward pass.
#include <algorithm>

#include "cost/counts.h"
#include "cost/predict.h"

namespace avf::cost {

namespace {

auto D(int64_t v) -> double { return static_cast<double>(v); }

auto ActivationBytes(Precision p) -> double { return p == Precision::Fp32 ? 4 : 2; }

struct Link {
  double bandwidth = 1;  // bytes/s per GPU
  double latency = 0;    // s per ring step
};

// The link a group's ring runs over: NVLink inside a node; across nodes, the
// GPU's share of the node's NICs, cut by the oversubscription when the ring
// leaves its leaf switch.
auto LinkFor(const GroupSpan& span, const Hardware& hw) -> Link {
  if (span.nodes <= 1) return {hw.nvlink_bandwidth, hw.nvlink_latency};
  double nics = D(std::max<int64_t>(hw.nics_per_node, 1));
  double share = hw.nic_bandwidth * nics / D(std::max<int64_t>(hw.gpus_per_node, 1));
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

// FLOPs one GPU of the busiest (last) stage runs for one micro-batch.
struct MicroBatchWork {
  double forward = 0;
  double total = 0;  // forward + backward + recomputation
};

auto StageWork(const ModelShape& m, const Layout& l) -> MicroBatchWork {
  ParamCounts c = CountParams(m);
  double tokens = D(l.micro_batch) * D(m.seq_len);
  double layers = D(m.layers) / D(l.pipeline);
  double attention = AttentionFlopsPerTokenLayer(m);
  double layer_forward = tokens * (2.0 * D(c.layer_matmul) + attention);
  double logits_forward = tokens * 2.0 * D(m.vocab) * D(m.hidden);
  MicroBatchWork work;
  work.forward = (layers * layer_forward + logits_forward) / D(l.tensor);
  double recompute = 0;
  if (l.recompute == Recompute::Full) recompute = layers * layer_forward;
  if (l.recompute == Recompute::Selective) recompute = layers * tokens * attention;
  work.total = 3.0 * work.forward + recompute / D(l.tensor);
  return work;
}

// Tensor-parallel collectives of one micro-batch on one stage: two all-reduces
// (or reduce-scatter + all-gather pairs under sequence parallelism, the same
// bytes) forward and two backward per layer; full recomputation repeats the
// forward pair.
auto TensorComm(const Workload& w, const Layout& l, const Hardware& hw) -> double {
  if (l.tensor <= 1) return 0;
  const ModelShape& m = w.model;
  double bytes = D(l.micro_batch) * D(m.seq_len) * D(m.hidden) * ActivationBytes(w.precision);
  double per_layer = l.recompute == Recompute::Full ? 6.0 : 4.0;
  Link link = LinkFor(SpanOf(1, l.tensor, hw), hw);
  return D(m.layers) / D(l.pipeline) * per_layer * AllReduce(bytes, l.tensor, link);
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

// Gradients are reduced at the training precision while a backward pass
// runs: once per step, in the last micro-batch, for ZeRO-0/1 (which keep a
// whole gradient buffer); after every micro-batch for ZeRO-2, whose
// gradient shard cannot accumulate the other ranks' parts. ZeRO-1/2 split
// the all-reduce into that reduce-scatter and an all-gather of the updated
// parameters that the next step's first forward pass hides.
auto ExposedGradientSync(const Workload& w, const Layout& l, int64_t micro_batches, double bytes, const Link& link,
                         double compute_mb, double forward_mb) -> double {
  if (l.data <= 1) return 0;
  double backward_window = w.overlap_data_comm ? compute_mb - forward_mb : 0.0;
  double forward_window = w.overlap_data_comm ? forward_mb : 0.0;
  if (l.zero == 0) return std::max(0.0, AllReduce(bytes, l.data, link) - backward_window);
  double scatters = l.zero == 2 ? D(micro_batches) : 1.0;
  double scatter = HalfRing(bytes, l.data, link);
  double gather = HalfRing(bytes, l.data, link);
  return scatters * std::max(0.0, scatter - backward_window) + std::max(0.0, gather - forward_window);
}

}  // namespace

auto ComputeEfficiency(const ModelShape& m, const Layout& l) -> double {
  double width = D(m.hidden) / D(l.tensor);
  return kComputeEfficiency * width / (width + kNarrowMatrixWidth);
}

auto SpanOf(int64_t stride, int64_t size, const Hardware& hw, int64_t first) -> GroupSpan {
  int64_t g = std::max<int64_t>(hw.gpus_per_node, 1);
  int64_t first_node = first / g;
  int64_t last_node = (first + (size - 1) * stride) / g;
  GroupSpan span;
  span.nodes = stride >= g ? size : last_node - first_node + 1;
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

// PredictTime with the data-parallel span already known (Predict reports the
// span too, and walking every stage's groups twice per candidate is waste).
auto TimeWithSpan(const Workload& w, const Layout& l, const Hardware& hw, const GroupSpan& data_span) -> TimeBreakdown {
  TimeBreakdown t;
  int64_t m = MicroBatches(w, l);
  double rate = hw.peak_flops * ComputeEfficiency(w.model, l);
  MicroBatchWork work = StageWork(w.model, l);
  double compute_mb = work.total / rate;
  double tensor_mb = TensorComm(w, l, hw);
  if (w.overlap_tensor_comm) tensor_mb = std::max(0.0, tensor_mb - compute_mb);
  double pipeline_mb = PipelineComm(w, l, hw);

  // ZeRO-3 gathers the parameters before each micro-batch's forward and
  // backward and reduce-scatters its gradients; prefetching hides what the
  // compute covers.
  double params = ParamsPerGpu(w.model, l);
  double weight_bytes = w.precision == Precision::Fp32 ? 4 : 2;
  Link data_link = LinkFor(data_span, hw);
  double zero3_mb = 0;
  if (l.zero >= 3 && l.data > 1) {
    // One collective per layer: the latency term is paid layers/pipeline times.
    double layers = D(w.model.layers) / D(l.pipeline);
    double latency = layers * D(l.data - 1) * data_link.latency;
    double gather = HalfRing(params * weight_bytes, l.data, data_link) + latency;
    double scatter = HalfRing(params * weight_bytes, l.data, data_link) + latency;
    double forward_s = work.forward / rate;
    zero3_mb = std::max(0.0, gather - forward_s) + std::max(0.0, gather + scatter - (compute_mb - forward_s));
  }

  double per_mb = compute_mb + tensor_mb + pipeline_mb + zero3_mb;
  t.compute = D(m) * compute_mb;
  t.tensor_comm = D(m) * tensor_mb;
  t.pipeline_comm = D(m) * pipeline_mb;
  double v = l.schedule == Schedule::Interleaved ? D(l.virtual_stages) : 1.0;
  t.bubble = D(l.pipeline - 1) / v * per_mb;
  t.data_comm = D(m) * zero3_mb;
  if (l.zero < 3) {
    t.data_comm += ExposedGradientSync(w, l, m, params * weight_bytes, data_link, compute_mb, work.forward / rate);
  }
  double owned = l.zero >= 1 ? params / D(l.data) : params;
  t.optimizer = hw.hbm_bandwidth > 0 ? owned * OptimizerTraffic(w) / hw.hbm_bandwidth : 0;
  return t;
}

}  // namespace

auto PredictTime(const Workload& w, const Layout& l, const Hardware& hw) -> TimeBreakdown {
  return TimeWithSpan(w, l, hw, DataSpan(l, hw));
}

auto Predict(const Workload& w, const Layout& l, const Hardware& hw) -> Prediction {
  Prediction p;
  p.data_span = DataSpan(l, hw);
  p.memory = PredictMemory(w, l);
  p.memory_per_gpu = p.memory.total();
  p.time = TimeWithSpan(w, l, hw, p.data_span);
  p.step_time = p.time.step();
  double tokens = D(w.global_batch) * D(w.model.seq_len);
  p.tokens_per_s = p.step_time > 0 ? tokens / p.step_time : 0;
  double flops = ModelFlopsPerToken(w.model) * p.tokens_per_s / D(std::max<int64_t>(w.gpus, 1));
  p.tflops_per_gpu = flops / 1e12;
  p.mfu = hw.peak_flops > 0 ? flops / hw.peak_flops : 0;
  p.fits = p.memory.total() <= hw.gpu_memory;
  return p;
}

}  // namespace avf::cost
