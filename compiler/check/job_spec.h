// Phase 5 output: one job with every reference followed and every number
// read out of the checked program, plus where each parallel field was written
// so that later phases can point at it. Nothing here sees the AST.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/Support/SMLoc.h>

#include "cost/shape.h"

namespace avf::check {

// The closed sets of the language that later phases decide on. Sema checks
// the written strings against the schema; extract.cpp maps them here once,
// and Name() spells each value back as the language (and plan.json) does.
enum class StorageKind : uint8_t { Ceph, S3, Minio, Beegfs, Lustre, Nfs, Pvc, Local };
enum class TokenFormat : uint8_t { U16, U32 };
enum class LrSchedule : uint8_t { Cosine, Linear, Constant };
enum class Scheduler : uint8_t { Kueue, Volcano, Default };
enum class Target : uint8_t { Kubeflow, JobSet, Slurm };
enum class FabricKind : uint8_t { NvLink, Infiniband, Ethernet };
enum class LengthField : uint8_t { Steps, Tokens, Epochs };
enum class TrainerKind : uint8_t { Avf, Torchtitan, Megatron };

inline constexpr std::array kStorageKinds{StorageKind::Ceph,   StorageKind::S3,     StorageKind::Minio,
                                          StorageKind::Beegfs, StorageKind::Lustre, StorageKind::Nfs,
                                          StorageKind::Pvc,    StorageKind::Local};
inline constexpr std::array kTokenFormats{TokenFormat::U16, TokenFormat::U32};
inline constexpr std::array kLrSchedules{LrSchedule::Cosine, LrSchedule::Linear, LrSchedule::Constant};
inline constexpr std::array kSchedulers{Scheduler::Kueue, Scheduler::Volcano, Scheduler::Default};
inline constexpr std::array kTargets{Target::Kubeflow, Target::JobSet, Target::Slurm};
inline constexpr std::array kFabricKinds{FabricKind::NvLink, FabricKind::Infiniband, FabricKind::Ethernet};
inline constexpr std::array kLengthFields{LengthField::Steps, LengthField::Tokens, LengthField::Epochs};
inline constexpr std::array kTrainerKinds{TrainerKind::Avf, TrainerKind::Torchtitan, TrainerKind::Megatron};

auto Name(StorageKind v) -> std::string_view;
auto Name(TokenFormat v) -> std::string_view;
auto Name(LrSchedule v) -> std::string_view;
auto Name(Scheduler v) -> std::string_view;
auto Name(Target v) -> std::string_view;
auto Name(FabricKind v) -> std::string_view;
auto Name(LengthField v) -> std::string_view;
auto Name(TrainerKind v) -> std::string_view;

// ceph, s3 and minio hold objects (endpoint and bucket); the others are
// file systems the pods mount.
auto IsObjectStore(StorageKind v) -> bool;
auto IsFileSystem(StorageKind v) -> bool;
// 2 or 4.
auto TokenBytes(TokenFormat v) -> int;

// The value among `all` whose Name() is `text`; nullopt for any other text
// (a field that is not written). Works for the cost model's enums too.
template <typename E, size_t N>
auto FromName(std::string_view text, const std::array<E, N>& all) -> std::optional<E> {
  for (E v : all) {
    if (Name(v) == text) return v;
  }
  return std::nullopt;
}

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
  StorageKind storage_kind = StorageKind::Local;
  std::string path;
  std::string endpoint, bucket, mount, claim, credentials;  // as declared; empty when absent
  std::string ca_bundle;                                    // ConfigMap of an https store's CA
  std::string storage_class;                                // for kind = pvc
  std::optional<double> capacity;                           // bytes
  std::optional<double> read_bw, write_bw;                  // bytes per second
  llvm::SMRange decl_range;                                 // the storage declaration's name
  auto valid() const -> bool { return !storage.empty(); }
};

struct DatasetSpec {
  std::string name;
  Location source;
  int64_t tokens = 0;
  int64_t shards = 1;
  TokenFormat format = TokenFormat::U16;
  int token_bytes = 2;               // TokenBytes(format)
  std::optional<Location> stage_to;  // path = the dataset's name under the hot tier's root
};

struct OptimizerSpec {
  cost::OptimizerKind kind = cost::OptimizerKind::AdamW;
  std::optional<double> lr, weight_decay;
  std::optional<std::pair<double, double>> betas;
  int64_t warmup = 0;
  LrSchedule schedule = LrSchedule::Cosine;
};

struct CheckpointSpec {
  bool enabled = false;
  std::optional<int64_t> every_steps;
  std::optional<double> every_seconds;
  std::optional<Location> dir, export_to;
  std::optional<int64_t> keep;
  bool async = false;
  // `encrypt = secret("NAME")`: the Secret whose key `key` seals the data
  // files; empty when the checkpoints are not encrypted.
  std::string encrypt_secret;
};

// `validation { data = DATASET; every = N; batches = M }`: held-out data
// whose loss avf-run logs every N steps over M global batches.
struct ValidationSpec {
  DatasetSpec dataset;
  int64_t every = 1;
  int64_t batches = 8;
};

// Where the checks point: a field's written value, else the declaration.
struct SpecRanges {
  llvm::SMRange gpus, batch, precision, attention, length;
  llvm::SMRange model, model_decl, heads, kv_heads, layers, vocab;  // model: the job's `model = NAME`
  llvm::SMRange cluster_decl, nodes, node_decl, node_gpus;
  llvm::SMRange dataset_decl, dataset_source, dataset_tokens, format, stage_to;
  llvm::SMRange gpu_decl;
  llvm::SMRange hot_decl, hot_capacity, checkpoint_dir, topology;
  llvm::SMRange encrypt, checkpoint_keep, init;
  // validation.data as written, and the held-out dataset's fields
  llvm::SMRange validation_data, validation_source, validation_format, validation_stage_to;
};

// A string as written, with where it was written (the declaration's name
// when it is defaulted or inherited from a stdlib file).
struct Written {
  std::string value;
  llvm::SMRange range;
};

// `monitoring { ... }`: avf-run's Prometheus endpoint and the job's alerts.
// The thresholds are the plan's predictions times these factors.
struct MonitoringSpec {
  int64_t port = 9400;  // local rank i serves on port + i
  llvm::SMRange port_range;
  std::optional<llvm::SMRange> written;  // the record, when the job writes one
  bool alerts = true;
  bool dashboard = false;
  double stall_factor = 10;
  double mfu_fraction = 0.5;
  double mfu_for = 1800;  // seconds
  double checkpoint_factor = 3;
};

// What the manifests need beyond the plan: scheduling, pod resources, NCCL
// and fabric settings, staging. Read here so that deploy/ sees no sema.
struct DeploySpec {
  Scheduler scheduler = Scheduler::Kueue;
  std::optional<FabricKind> network_kind;  // the inter-node fabric's
  std::vector<Written> node_resources;     // `name=count`
  std::vector<Written> node_taints;        // `key[=value]:Effect`
  std::vector<Written> labels;             // `key=value` node selector
  std::vector<Written> hcas;
  Written socket_interface;
  std::vector<Written> pod_networks;  // Multus
  // job.pod: the site's needs
  std::vector<Written> image_pull_secrets, extra_env, extra_labels, extra_annotations;
  bool guaranteed_qos = false;
  llvm::SMRange qos_range;
  Written leaf_label, spine_label;
  std::optional<int64_t> node_cpus;
  std::optional<double> node_memory;  // the node's cpu_memory, bytes
  // The node's `cpus` and `cpu_memory` as written in a stdlib module: the
  // reference machine's figures, not the user's (W0932). `reference_node` is
  // the first stdlib node up the node's chain (the node itself, or the base
  // of the user's own), `reference_node_use` where the user's files name it:
  // the cluster's `node = NAME`, or the user's node that derives from it.
  bool node_cpus_in_stdlib = false, node_memory_in_stdlib = false;
  std::string reference_node;
  llvm::SMRange reference_node_use;
  std::optional<int64_t> cpus;  // job.resources
  std::optional<double> memory, shm;
  llvm::SMRange cpus_range, memory_range, shm_range, node_cpus_range, node_memory_range;
  std::optional<int64_t> copiers;
  bool cleanup_staged = false;
  int64_t max_restarts = 3;
  bool preflight = true;
  // `device = cpu`: the plan's ranks train on the nodes' CPUs (avf-run
  // --device cpu); the pods ask for no GPU, the plan still predicts the GPUs.
  bool on_cpu = false;
  llvm::SMRange device_range;      // as written, or the job's name
  std::optional<double> deadline;  // seconds
  llvm::SMRange deadline_range;
  Written image, tools_image, k8s_namespace, queue, priority;
  MonitoringSpec monitoring;
};

// `elastic { min_nodes; max_nodes }`: the job trains on any node count in
// [min_nodes, max_nodes], each with its own layout (plan::ElasticFamily).
struct ElasticSpec {
  int64_t min_nodes = 1;
  std::optional<int64_t> max_nodes;  // default: the job's own node count
  llvm::SMRange range, min_range, max_range;
};

// `trainer { kind; version; entry }`: the program the training pods run.
// avf-run executes plan.json; torchtitan and Megatron-LM get the plan
// translated into their own configuration (compiler/trainers/).
struct TrainerSpec {
  TrainerKind kind = TrainerKind::Avf;
  Written version;           // as written; empty: the pinned version
  Written entry;             // as written; empty: the trainer's default entry point
  llvm::SMRange kind_range;  // the written kind, or the job's name
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
  std::optional<Location> init;  // pretrained weights (a Hugging Face transformers folder)
  std::optional<ValidationSpec> validation;
  int64_t steps = 0;                        // training length in optimizer steps, from steps/tokens/epochs
  std::optional<LengthField> length_field;  // what the user wrote
  double requested_tokens = 0;  // as written (steps x batch x seq_len for `steps`), before rounding to steps
  std::optional<double> price_per_gpu_hour;
  std::string currency = "USD";  // ISO 4217 code of the price
  std::optional<Target> target;  // nullopt: not written
  TrainerSpec trainer;
  std::optional<ElasticSpec> elastic;  // nullopt: the job trains on its own node count only
  DeploySpec deploy;
};

// The nodes of the job's own `gpus`, and the most an elastic job trains on
// (`max_nodes`, by default its own).
auto OwnNodes(const JobSpec& s) -> int64_t;
auto MostNodes(const JobSpec& s) -> int64_t;

}  // namespace avf::check
