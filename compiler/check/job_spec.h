// Phase 5 output: one job with every reference followed and every number
// read out of the checked program, plus where each parallel field was written
// so that later phases can point at it. Nothing here sees the AST.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <llvm/Support/SMLoc.h>

#include "cost/shape.h"

namespace avf::check {

// A parallelism field: a fixed value, or nullopt when it is `auto`.
struct IntChoice {
  std::optional<int64_t> value;
  llvm::SMRange range;  // the written value, or the job's name when defaulted
  bool written = false;
};

template <typename T>
struct EnumChoice {
  std::optional<T> value;
  llvm::SMRange range;
  bool written = false;
};

struct ParallelChoices {
  IntChoice data, tensor, pipeline, virtual_stages, zero, micro_batch;
  EnumChoice<cost::Schedule> schedule;
  EnumChoice<cost::Recompute> recompute;
  EnumChoice<bool> sequence_parallel;
  llvm::SMRange record_range;  // `parallel { ... }`, or the job name
};

// A `STORAGE / "path"` location.
struct Location {
  std::string storage;
  std::string storage_kind;  // ceph, s3, minio, beegfs, lustre, nfs, pvc, local
  std::string path;
  std::string endpoint, bucket, mount, claim, credentials;  // as declared; empty when absent
  std::string storage_class;  // for kind = pvc
  std::optional<double> capacity;  // bytes
  std::optional<double> read_bw, write_bw;  // bytes per second
  llvm::SMRange decl_range;  // the storage declaration's name
  auto valid() const -> bool { return !storage.empty(); }
};

struct DatasetSpec {
  std::string name;
  Location source;
  int64_t tokens = 0;
  int64_t shards = 1;
  int token_bytes = 2;           // tokens_u16: 2, tokens_u32: 4
  std::string format;            // "tokens_u16" / "tokens_u32"
  std::optional<Location> stage_to;  // path = the dataset's name under the hot tier's root
};

struct OptimizerSpec {
  cost::OptimizerKind kind = cost::OptimizerKind::AdamW;
  std::optional<double> lr, weight_decay;
  std::optional<std::pair<double, double>> betas;
  int64_t warmup = 0;
  std::string schedule = "cosine";
};

struct CheckpointSpec {
  bool enabled = false;
  std::optional<int64_t> every_steps;
  std::optional<double> every_seconds;
  std::optional<Location> dir, export_to;
  std::optional<int64_t> keep;
  bool async = false;
};

// Where the checks point: a field's written value, else the declaration.
struct SpecRanges {
  llvm::SMRange gpus, batch, precision, length;
  llvm::SMRange model_decl, heads, kv_heads, layers, vocab;
  llvm::SMRange cluster_decl, nodes, node_decl, node_gpus;
  llvm::SMRange dataset_decl, dataset_source, dataset_tokens, format, stage_to;
  llvm::SMRange gpu_decl;
  llvm::SMRange hot_decl, hot_capacity, checkpoint_dir, topology;
};

// A string as written, with where it was written (the declaration's name
// when it is defaulted or inherited from a stdlib file).
struct Written {
  std::string value;
  llvm::SMRange range;
};

// What the manifests need beyond the plan: scheduling, pod resources, NCCL
// and fabric settings, staging. Read here so that deploy/ sees no sema.
struct DeploySpec {
  std::string scheduler = "kueue";        // kueue, volcano or default
  std::string network_kind;               // the inter-node fabric: infiniband or ethernet
  std::vector<Written> node_resources;    // `name=count`
  std::vector<Written> node_taints;       // `key[=value]:Effect`
  std::vector<Written> labels;            // `key=value` node selector
  std::vector<Written> hcas;
  Written socket_interface;
  Written leaf_label, spine_label;
  std::optional<int64_t> node_cpus;
  std::optional<double> node_memory;      // the node's cpu_memory, bytes
  std::optional<int64_t> cpus;            // job.resources
  std::optional<double> memory, shm;
  llvm::SMRange cpus_range, memory_range, shm_range, node_cpus_range, node_memory_range;
  std::optional<int64_t> copiers;
  bool cleanup_staged = false;
  int64_t max_restarts = 3;
  Written image, tools_image, k8s_namespace, queue, priority;
};

struct JobSpec {
  std::string name;
  SpecRanges at;
  llvm::SMRange name_range;
  std::string model_name, cluster_name, node_name, gpu_name, network_name;
  cost::Workload workload;
  cost::Hardware hardware;
  ParallelChoices parallel;
  DatasetSpec dataset;
  OptimizerSpec optimizer;
  CheckpointSpec checkpoint;
  int64_t steps = 0;  // training length in optimizer steps, from steps/tokens/epochs
  std::string length_field;  // "steps", "tokens" or "epochs": what the user wrote
  double requested_tokens = 0;  // as written (steps x batch x seq_len for `steps`), before rounding to steps
  std::optional<double> price_per_gpu_hour;
  std::string target;  // kubeflow, jobset or slurm
  DeploySpec deploy;
};

}  // namespace avf::check
