// The cost model's inputs: plain numbers, no source locations. The checker
// fills them from a job; the calibration tool fills them from published runs.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace avf::cost {

enum class Arch : uint8_t { Gpt2, Llama };
enum class Precision : uint8_t { Bf16, Fp16, Fp32 };
enum class Schedule : uint8_t { OneFOneB, Interleaved, GPipe };
enum class Recompute : uint8_t { None, Selective, Full };
enum class OptimizerKind : uint8_t { AdamW, Sgd };
// flash: the attention kernel never stores the s x s score matrix and its
// backward pass rebuilds the scores block by block (FlashAttention);
// materialized: the softmax output is stored for the backward pass.
enum class Attention : uint8_t { Flash, Materialized };

inline constexpr std::array kArchs{Arch::Gpt2, Arch::Llama};
inline constexpr std::array kPrecisions{Precision::Bf16, Precision::Fp16, Precision::Fp32};
inline constexpr std::array kSchedules{Schedule::OneFOneB, Schedule::Interleaved, Schedule::GPipe};
inline constexpr std::array kRecomputes{Recompute::None, Recompute::Selective, Recompute::Full};
inline constexpr std::array kOptimizerKinds{OptimizerKind::AdamW, OptimizerKind::Sgd};
inline constexpr std::array kAttentions{Attention::Flash, Attention::Materialized};

// The language's (and plan.json's) spelling of each value.
auto Name(Arch a) -> std::string_view;
auto Name(Precision p) -> std::string_view;
auto Name(Schedule s) -> std::string_view;
auto Name(Recompute r) -> std::string_view;
auto Name(OptimizerKind k) -> std::string_view;
auto Name(Attention a) -> std::string_view;

struct ModelShape {
  Arch arch = Arch::Gpt2;
  int64_t layers = 1;
  int64_t hidden = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t ffn = 4;
  int64_t vocab = 1;
  int64_t seq_len = 1;
  bool tied_embeddings = true;
};

// One GPU's share of the machine, as the time and memory model see it.
struct Hardware {
  double gpu_memory = 0;     // bytes usable by the training process
  double peak_flops = 0;     // dense rate at the job's precision, FLOP/s
  double hbm_bandwidth = 0;  // bytes/s
  int64_t gpus_per_node = 1;
  double nvlink_bandwidth = 0;  // bytes/s per GPU, one direction
  double nvlink_latency = 0;    // seconds per ring step
  double nic_bandwidth = 0;     // bytes/s per NIC, one direction
  int64_t nics_per_node = 0;
  double network_latency = 0;  // seconds per ring step
  int64_t nodes = 1;           // in the cluster
  int64_t nodes_per_leaf = 0;  // 0: one flat switch
  // Leaf switches under one spine block, the middle level of a 3-level fat
  // tree (spine blocks joined by core switches); 0: not declared, every
  // leaf under one spine level (2 levels).
  int64_t leaves_per_spine = 0;
  double oversubscription = 1;  // leaf downlink:uplink
};

// One assignment of every parallelism field.
struct Layout {
  int64_t data = 1;
  int64_t tensor = 1;
  int64_t pipeline = 1;
  int64_t virtual_stages = 1;
  int zero = 0;
  int64_t micro_batch = 1;
  Schedule schedule = Schedule::OneFOneB;
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;

  auto world() const -> int64_t { return data * tensor * pipeline; }
  friend auto operator==(const Layout&, const Layout&) -> bool = default;
};

// Everything about the job that is not the layout.
struct Workload {
  ModelShape model;
  Precision precision = Precision::Bf16;
  Attention attention = Attention::Flash;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  int64_t gpus = 1;
  int64_t global_batch = 1;  // sequences per step
  // The runtime reduces gradients while the last backward pass runs.
  bool overlap_data_comm = true;
  // The runtime overlaps tensor-parallel collectives with the matrix
  // multiplications around them (Megatron --tp-comm-overlap, async TP).
  bool overlap_tensor_comm = false;
  // Data-parallel gradients are reduced in fp32 rather than at the training
  // precision (FSDP's reduce_dtype, Megatron's bf16 default); avf-run reduces
  // at the training precision.
  bool reduce_in_fp32 = false;
  // The memory-bound kernels run in fp32 whatever the training precision
  // (autocast mixed precision: norms and softmax in fp32, so the residual
  // stream is fp32 too); avf-run keeps them at the training precision.
  bool fp32_elementwise = false;
};

}  // namespace avf::cost
