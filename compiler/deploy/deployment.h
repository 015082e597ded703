// Phase 7 output: one planned job lowered to what a cluster runs. Every
// decision the manifests make (names, pods, resources, volumes, environment,
// placement, staging ranges) is taken here, so the emitters only spell it as
// Argo, Kubernetes or Slurm text and never decide anything themselves.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check/job_spec.h"
#include "deploy/trainer_paths.h"

namespace avf::deploy {

// The job's (check/job_spec.h), or the one an `emit` command asks for.
using check::Scheduler;
using check::Target;

// One environment variable: a literal value, a downward-API field, or a key
// of a Secret (credentials are only ever referenced, never written).
struct EnvVar {
  std::string name;
  std::string value;
  std::string field_path;               // fieldRef, when set
  std::string secret_name, secret_key;  // secretKeyRef, when set
  std::string note;                     // why it has this value, as a comment

  static auto Literal(std::string name, std::string value, std::string note = "") -> EnvVar {
    return {std::move(name), std::move(value), "", "", "", std::move(note)};
  }
  static auto FromField(std::string name, std::string path) -> EnvVar {
    return {std::move(name), "", std::move(path), "", "", ""};
  }
  static auto FromSecret(std::string name, std::string secret, std::string key) -> EnvVar {
    return {std::move(name), "", "", std::move(secret), std::move(key), ""};
  }
};

enum class VolumeKind : uint8_t { HostPath, Claim, ConfigMap, Memory, Secret };

// Every member has a default, so that a volume is written with designated
// initializers naming only what it sets.
struct Volume {
  VolumeKind kind = VolumeKind::HostPath;
  std::string name{};        // the volume's name in the pod (DNS-1123 label)
  std::string source{};      // host path, claim, ConfigMap or Secret name
  std::string mount_path{};  // inside the containers
  std::string size_limit{};  // Memory volumes: a Kubernetes quantity
  bool read_only = false;
  std::string storage{};  // the .avf storage tier, "" for plan, shm and token
  // Host paths of a shared tier: the kernel's names of its file system
  // (/proc/self/mountinfo), which a pod checks before it writes there.
  std::vector<std::string> fs_types{};
  int file_mode = 0;   // Secret volumes: the mode of its files (defaultMode)
  std::string note{};  // why the file mode is what it is, as a comment
  std::string item{};  // Secret volumes: mount only this key (as a file of its name); "" mounts every key
};

// The job token every rank presents when it joins the rendezvous store on
// node 0 (runtime/rendezvous/token.h), so that only this job's pods are
// admitted. On Kubernetes it is the key `key` of the Secret `secret`, mounted
// read-only into the training pods; the workflow's make-token step creates
// the Secret with a fresh token unless it exists. On Slurm the batch script
// makes a fresh token at job start and hands it to the ranks in `env`.
struct JobToken {
  std::string secret;         // Kubernetes: the Secret's name, NAME-rendezvous
  std::string key;            // its key, the file name in the mount
  std::string mount_dir;      // where the training pods mount the Secret
  std::string env;            // what avf-run reads: AVF_JOB_TOKEN_FILE or AVF_JOB_TOKEN
  int64_t random_bytes = 32;  // of /dev/urandom in a fresh token, written as hex
  auto file() const -> std::string { return mount_dir + "/" + key; }
};

// The key that encrypts the checkpoints' data files (`checkpoint.encrypt`).
// On Kubernetes the key `key` of the Secret `secret`, and only that key,
// mounted read-only into the training pods at `mount_dir`; on Slurm the file
// $AVF_SECRETS/SECRET/key. avf-run is given the file's path
// (--checkpoint-key-file), never the key.
struct CheckpointKey {
  std::string secret;
  std::string key = "key";
  std::string mount_dir;  // Kubernetes
  std::string file;       // the path avf-run reads; on Slurm "${AVF_SECRETS}/SECRET/key"
};

// A PersistentVolumeClaim the artifacts create (a `kind = pvc` tier that
// declares its capacity).
struct Claim {
  std::string name, storage_class, capacity;  // capacity: a Kubernetes quantity
  std::string storage;
};

// An object store as an rclone remote configured from the environment.
struct Remote {
  std::string name;      // rclone remote name: `avfsrc`, `avfdst`
  std::string storage;   // the .avf storage tier
  std::string provider;  // rclone's s3 provider: Ceph, Minio, AWS
  std::string endpoint, bucket;
  std::string secret;  // credentials Secret; "" when the tier declares none
  // A ConfigMap whose key `ca.crt` is the CA of an https endpoint; "" for the system's.
  std::string ca_configmap;
  // A file-system tier instead of an object store: its path in the pod.
  std::string local_root;
  auto is_local() const -> bool { return !local_root.empty(); }
};

// Shards first..last (inclusive) copied by one copier pod.
struct ShardRange {
  int64_t first = 0;
  int64_t last = 0;
};

struct Staging {
  Remote source;
  std::string source_path;         // key prefix (or directory) of the shards
  std::string dest_dir;            // the hot-tier directory in the pods
  std::string hot_storage;         // the hot tier
  std::vector<ShardRange> ranges;  // one per copier
  double total_bandwidth = 0;      // bytes/s the copiers share (0: unknown)
  int64_t shards = 0;
  // What the job declares: the tokens may be approximate. The shards' headers
  // give each shard's exact count, and with it the file's size, which the
  // staging steps check (docs/data-format.md).
  int64_t declared_tokens = 0;
  std::string format;       // tokens_u16 or tokens_u32
  int64_t token_bytes = 2;  // of the format: every shard's header must say so
  int64_t header_bytes = 1024;
  // Copies at once: every range's pod (Argo), one task per node (Slurm);
  // each is limited to its share of the tiers' bandwidth (rclone's --bwlimit,
  // KiB/s; 0 when the bandwidth is unknown: no limit).
  int64_t concurrent_copies = 1;
  int64_t bwlimit_kib = 0;
  std::string marker;    // identifies the staged copy (source, size, format)
  bool cleanup = false;  // default of the workflow's cleanup-staged parameter
};

struct Export {
  Remote dest;
  std::string dest_path;
  std::string checkpoint_dir;                            // in the pods
  std::string checkpoint_storage;                        // the tier that holds it
  std::optional<int64_t> keep;                           // newest N committed checkpoints that verify; nullopt: all
  check::TrainerKind trainer = check::TrainerKind::Avf;  // whose checkpoints: how a complete one is told
};

struct Toleration {
  std::string key, value, effect;  // operator Equal when value is set, else Exists
};

// Where the pods go on the fat tree, from the planner's placement.
enum class TopologyMode : uint8_t {
  None,       // no leaf label declared, or one node
  OneLeaf,    // every pod under one leaf switch (required)
  Slices,     // Kueue: each slice of `slice_nodes` pods under one leaf
  Preferred,  // pack as few leaves as possible (preferred)
};

struct Placement {
  TopologyMode mode = TopologyMode::None;
  std::string leaf_label, spine_label;
  int64_t slice_nodes = 0;
  int64_t leaves_used = 0;
  // Slices under one spine block is required only when the job's leaves fit
  // under one (the fat tree's leaves_per_spine); a larger job spans blocks.
  bool one_spine = false;
};

struct Resources {
  int64_t gpus = 0;  // nvidia.com/gpu per pod
  std::optional<int64_t> cpus;
  std::string memory;                                     // Kubernetes quantity, "" for none
  int64_t memory_mib = 0;                                 // the same, for Slurm's --mem
  std::string shm;                                        // /dev/shm size limit
  std::vector<std::pair<std::string, int64_t>> extended;  // RDMA pools, ...
  bool guaranteed = false;                                // limits = requests (Guaranteed QoS)
};

struct SecurityProfile {
  // RDMA registers pinned memory beyond RLIMIT_MEMLOCK: the trainer keeps
  // IPC_LOCK, which Kubernetes only grants to UID 0.
  bool ipc_lock = false;
  int64_t user = 1000, group = 1000;
  // The pod's fsGroup: a non-root trainer reads the token file (mode 0400,
  // owned by root) through its group, which the kubelet sets to this one.
  std::optional<int64_t> fs_group;
};

// avf-run's Prometheus endpoint and what watches it (emit/monitoring.cpp):
// local rank i of a pod (a Slurm node) serves on `port` + i, and each alert
// threshold is the plan's prediction times the job's factor, in seconds.
struct Monitoring {
  int port = 9400;
  int64_t ports = 1;            // one per rank of a node
  std::string address_env;      // Kubernetes: the pod's IP, for --metrics-address
  int64_t scrape_seconds = 15;  // the PodMonitor's interval
  bool alerts = true;           // the PrometheusRule
  bool dashboard = false;       // the Grafana dashboard's ConfigMap
  int64_t stall_seconds = 0;    // no step finished (also the data position's window)
  double mfu_below = 0;         // avf_mfu_ratio under this for `mfu_seconds`
  double mfu_predicted = 0;
  int64_t mfu_seconds = 0;
  int64_t checkpoint_seconds = 0;  // no commit for this long; 0 when the job writes none on the way
  int64_t restart_window_seconds = 3600;
  // What the thresholds come from, for the alerts' texts.
  double step_seconds = 0;         // predicted
  double write_seconds = 0;        // one checkpoint's predicted write, in stall_ and checkpoint_seconds
  double checkpoint_interval = 0;  // predicted seconds between two checkpoints
  double stall_factor = 10, checkpoint_factor = 3;
  auto port_name(int64_t local_rank) const -> std::string { return "metrics-" + std::to_string(local_rank); }
};

// The folder in the checkpoint folder where avf-run writes metrics.jsonl and
// its memory reports (--run-dir).
inline constexpr std::string_view kRunFolder = "run";

struct Deployment {
  std::string source_name;  // the main .avf file as given on the command line
  std::string job;          // the job's .avf name
  std::string plan_sha256;  // of the plan.json bytes below
  std::string plan_json;
  std::string name;           // base name of every object (DNS-1035)
  std::string k8s_namespace;  // "" = the namespace applied to
  Target target = Target::Kubeflow;
  Scheduler scheduler = Scheduler::Kueue;
  std::string image, tools_image, queue, priority;
  int64_t nodes = 1;
  int64_t procs_per_node = 1;  // ranks (GPUs) per pod
  // An elastic job's node counts that have a layout, most first; empty for
  // any other job. Slurm asks for --nodes=fewest-most and trains on the most
  // of them that the allocation holds.
  std::vector<int64_t> elastic_nodes;
  int64_t max_restarts = 3;
  // The workflow's activeDeadlineSeconds: the job's `deadline`, else twice
  // the predicted time to train plus a day.
  int64_t deadline_seconds = 0;
  bool deadline_from_job = false;
  // How long a finished workflow and training object are kept (logs, status).
  int64_t keep_finished_seconds = 7 * 86400;
  int64_t backoff_limit = 4;  // PyTorchJob's, counted per pod restart: max_restarts x nodes + 1
  int port = 29500;           // the rendezvous store on node 0
  Resources resources;
  SecurityProfile security;
  std::vector<std::string> command;  // avf-run and its flags
  std::string run_dir;               // avf-run's --run-dir; "" for the container's folder
  TrainerPaths trainer_paths;        // the same folders, for another trainer's configuration
  // The trainer the pods run. For torchtitan and Megatron-LM, `command` runs
  // torchrun with the translated configuration, `trainer_config` (the driver
  // fills it from the plan and trainer_paths), named `trainer_config_name`
  // beside plan.json.
  check::TrainerKind trainer = check::TrainerKind::Avf;
  std::string trainer_config_name, trainer_config;
  // The Python files its pods run beside the configuration (name, text).
  std::vector<std::pair<std::string, std::string>> trainer_files;
  std::vector<EnvVar> env;      // NCCL and aviflow settings
  std::vector<Volume> volumes;  // of the training pods
  std::vector<Claim> claims;
  std::vector<std::pair<std::string, std::string>> node_selector;
  std::vector<Toleration> tolerations;
  Placement placement;
  std::optional<Staging> staging;
  std::optional<Export> export_checkpoints;
  std::optional<CheckpointKey> checkpoint_key;
  // Only avf-run serves metrics: none for another trainer.
  std::optional<Monitoring> monitoring;
  JobToken token;
  // The site's needs (job.pod, cluster.pod_networks).
  std::vector<std::string> image_pull_secrets;
  std::vector<std::pair<std::string, std::string>> extra_labels;         // on every object and pod
  std::vector<std::pair<std::string, std::string>> pod_annotations;      // on every pod
  std::vector<std::pair<std::string, std::string>> trainer_annotations;  // those, and Multus networks
  std::string socket_interface;  // checked in the training pods before avf-run starts
  // Names of the companion objects (the workflow is named `name`).
  // The plan's ConfigMap is NAME-plan-HASH: the first 10 hex digits of plan_sha256.
  std::string configmap, service_account;
};

}  // namespace avf::deploy
