// Memory per GPU: model states by ZeRO stage (Rajbhandari et al. 2020:
// 16-bit weights and gradients, fp32 master weights and moments), activations by recompute mode and
// sequence parallelism (Korthikanti et al. 2022, Table 2), pipeline
// in-flight micro-batches, logits and communication buffers.
#include <algorithm>

#include "cost/counts.h"
#include "cost/predict.h"
#include "cost/stages.h"

namespace avf::cost {

namespace {

auto D(int64_t v) -> double { return static_cast<double>(v); }

auto WeightBytes(Precision p) -> double { return p == Precision::Fp32 ? 4 : 2; }

// fp32 master weights (16-bit training only) plus the optimizer's moments.
auto OptimizerBytes(Precision p, OptimizerKind kind) -> double {
  double master = p == Precision::Fp32 ? 0 : 4;
  double moments = kind == OptimizerKind::AdamW ? 8 : 4;
  return master + moments;
}

// NCCL keeps NCCL_BUFFSIZE (4 MiB) per channel and direction; at up to 32
// channels that is 256 MiB per communicator a rank belongs to.
constexpr double kBuffersPerCommunicator = 256.0 * 1024 * 1024;

// Korthikanti Table 2 generalised to any ffn width, without its dropout
// terms (aviflow jobs train without dropout: the language has no dropout
// and avf-run applies none): bytes of one layer's stored activations for
// one micro-batch, in 16-bit.
auto LayerActivationBytes(const ModelShape& m, const Layout& l, Attention attention) -> double {
  double sbh = D(m.seq_len) * D(l.micro_batch) * D(m.hidden);
  double t = D(l.tensor);
  // 32 = 16 + 4 ffn/h for GELU; SwiGLU keeps gate, up, activation and product.
  double ffn_term = (m.arch == Arch::Llama ? 8.0 : 4.0) * D(m.ffn) / D(m.hidden);
  double linear_part = 8.0 + ffn_term;  // the part tensor parallelism splits
  // The softmax output, which attention over V reads (no dropout mask or
  // output); a flash kernel keeps only each row's log-sum-exp instead.
  double attention_core = attention == Attention::Flash
                              ? 4.0 * D(m.heads) * D(m.seq_len) * D(l.micro_batch)
                              : 2.0 * D(m.heads) * D(m.seq_len) * D(m.seq_len) * D(l.micro_batch);
  // LayerNorm inputs 4, QKV and fc1 inputs 2 + 2: what plain tensor parallelism leaves replicated.
  constexpr double kReplicated = 8.0;
  if (l.recompute == Recompute::Full) return l.sequence_parallel ? 2.0 * sbh / t : 2.0 * sbh;
  bool rebuilds_core = l.recompute == Recompute::Selective && attention == Attention::Materialized;
  double kept_core = rebuilds_core ? 0.0 : attention_core / t;
  if (l.sequence_parallel) return sbh * (kReplicated + linear_part) / t + kept_core;
  return sbh * (kReplicated + linear_part / t) + kept_core;
}

// Micro-batches whose activations stage `stage` holds at its peak: under
// 1F1B the first stage holds p, each later one one fewer (never more than
// the step has); GPipe holds them all.
auto InFlightMicroBatches(const Layout& l, int64_t micro_batches, int64_t stage) -> double {
  if (l.pipeline == 1) return 1;
  if (l.schedule == Schedule::GPipe) return D(micro_batches);
  double held = D(std::min(l.pipeline - stage, micro_batches));
  if (l.schedule == Schedule::Interleaved && l.virtual_stages > 1) {
    held *= 1.0 + D(l.pipeline - 1) / D(l.pipeline * l.virtual_stages);
  }
  return held;
}

// The peak over the stages: each holds its in-flight micro-batches of its own
// layers (uneven splits give the middle stages more), the last also the
// logits of the micro-batches it holds.
auto ActivationBytes(const Workload& w, const Layout& l) -> double {
  const ModelShape& m = w.model;
  double scale = w.precision == Precision::Fp32 ? 2.0 : 1.0;
  double per_layer = LayerActivationBytes(m, l, w.attention);
  int64_t micro_batches = MicroBatches(w, l);
  // One layer is rebuilt in full while its backward runs.
  Layout plain = l;
  plain.recompute = Recompute::None;
  double rebuilt = l.recompute == Recompute::Full ? LayerActivationBytes(m, plain, w.attention) : 0.0;
  // Output layer and cross entropy on the last stage (Megatron
  // theoretical_memory_usage: 4 s b h (1 + V/h), vocab-parallel over t).
  double sbh = D(m.seq_len) * D(l.micro_batch) * D(m.hidden);
  double logits = 4.0 * sbh * (1.0 + D(m.vocab) / D(m.hidden)) / D(l.tensor);
  int64_t chunks = ChunksPerStage(l);
  if (l.pipeline == 1) return (per_layer * D(m.layers) + rebuilt + logits) * scale;
  double peak = 0;
  for (int64_t stage = 0; stage + 1 < l.pipeline; ++stage) {
    double layers = D(StageLayers(m.layers, l.pipeline, chunks, stage));
    peak = std::max(peak, per_layer * layers * InFlightMicroBatches(l, micro_batches, stage) + rebuilt);
  }
  // The last stage holds one micro-batch under 1F1B, all of them (with
  // their output layer's softmax) under GPipe.
  double last_held = l.schedule == Schedule::GPipe ? D(micro_batches) : 1.0;
  double last_layers = D(StageLayers(m.layers, l.pipeline, chunks, l.pipeline - 1));
  peak = std::max(peak, (per_layer * last_layers + logits) * last_held + rebuilt);
  return peak * scale;
}

auto Communicators(const Layout& l) -> int {
  return (l.tensor > 1 ? 1 : 0) + (l.data > 1 ? 1 : 0) + (l.pipeline > 1 ? 1 : 0);
}

}  // namespace

auto MicroBatches(const Workload& w, const Layout& l) -> int64_t {
  int64_t per_step = l.data * l.micro_batch;
  return per_step > 0 ? std::max<int64_t>(1, w.global_batch / per_step) : 1;
}

auto ParamsPerGpu(const ModelShape& m, const Layout& l) -> double {
  int64_t most = 0;
  for (int64_t stage = 0; stage < l.pipeline; ++stage) {
    most = std::max(most, StageParamsPerRank(m, l.pipeline, l.tensor, stage, ChunksPerStage(l)));
  }
  return D(most);
}

auto PredictMemory(const Workload& w, const Layout& l) -> MemoryBreakdown {
  MemoryBreakdown mem;
  double params = ParamsPerGpu(w.model, l);
  double d = D(l.data);
  mem.weights = params * WeightBytes(w.precision) / (l.zero >= 3 ? d : 1);
  mem.gradients = params * WeightBytes(w.precision) / (l.zero >= 2 ? d : 1);
  mem.optimizer = params * OptimizerBytes(w.precision, w.optimizer) / (l.zero >= 1 ? d : 1);
  mem.activations = ActivationBytes(w, l);
  mem.buffers = Communicators(l) * kBuffersPerCommunicator;
  if (l.zero >= 3 && l.data > 1) {
    // The layer being computed and the one prefetched, gathered in full.
    double layer = D(CountParams(w.model).per_layer) / D(l.tensor);
    mem.buffers += 2.0 * layer * WeightBytes(w.precision);
  }
  return mem;
}

}  // namespace avf::cost
