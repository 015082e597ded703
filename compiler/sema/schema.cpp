// The schema tables. Each field is built with a small fluent helper so that a
// table row reads like the spec: F("memory").Bytes().Required().
#include "sema/schema.h"

#include <fmt/format.h>

namespace avf::sema {

namespace {

using units::Dimension;

// Fluent builder for one FieldSchema row.
class F {
 public:
  explicit F(std::string_view name) { f_.name = name; }
  operator FieldSchema() const { return f_; }  // NOLINT: rows convert implicitly

  auto Quantity(Dimension d) -> F& {
    f_.type = FieldType::Quantity;
    f_.dim = d;
    return *this;
  }
  auto Bytes() -> F& { return Quantity(units::kBytes).Min(0, true); }
  auto Bandwidth() -> F& { return Quantity(units::kBandwidth).Min(0, true); }
  auto Rate() -> F& { return Quantity(units::kComputeRate).Min(0, true); }
  auto Time() -> F& { return Quantity(units::kTime).Min(0, true); }
  auto Power() -> F& { return Quantity(units::kPower).Min(0, true); }
  auto Count() -> F& {
    f_.type = FieldType::Quantity;
    f_.integer = true;
    return Min(1);
  }
  auto Number() -> F& {
    f_.type = FieldType::Quantity;
    return *this;
  }
  auto String() -> F& {
    f_.type = FieldType::String;
    return *this;
  }
  auto Bool() -> F& {
    f_.type = FieldType::Bool;
    return *this;
  }
  auto Enum(std::vector<std::string_view> values) -> F& {
    f_.type = FieldType::Enum;
    f_.enum_values = std::move(values);
    return *this;
  }
  auto Ref(ast::DeclKind kind) -> F& {
    f_.type = FieldType::Ref;
    f_.ref_kind = kind;
    return *this;
  }
  auto Location() -> F& {
    f_.type = FieldType::Location;
    return *this;
  }
  auto Secret() -> F& {
    f_.type = FieldType::Secret;
    return *this;
  }
  auto Record(const RecordSchema& r) -> F& {
    f_.type = FieldType::Record;
    f_.record = &r;
    return *this;
  }
  auto CountOrDuration() -> F& {
    f_.type = FieldType::CountOrDuration;
    return *this;
  }
  auto List(const FieldSchema& element, size_t min_items, size_t max_items) -> F& {
    f_.type = FieldType::List;
    f_.element = std::make_shared<FieldSchema>(element);
    f_.min_items = min_items;
    f_.max_items = max_items;
    return *this;
  }
  auto Min(double v, bool exclusive = false) -> F& {
    f_.min = v;
    f_.min_exclusive = exclusive;
    return *this;
  }
  auto Max(double v) -> F& {
    f_.max = v;
    return *this;
  }
  auto Required() -> F& {
    f_.required = true;
    return *this;
  }
  auto Auto() -> F& {
    f_.allow_auto = true;
    return *this;
  }
  auto Default(int64_t v) -> F& {
    SetDefault(DefaultValue::Kind::Integer).integer = v;
    return *this;
  }
  auto DefaultReal(double v) -> F& {
    SetDefault(DefaultValue::Kind::Real).real = v;
    return *this;
  }
  auto DefaultEnum(std::string_view v) -> F& {
    SetDefault(DefaultValue::Kind::Enum).text = v;
    return *this;
  }
  auto DefaultBool(bool v) -> F& {
    SetDefault(DefaultValue::Kind::Bool).boolean = v;
    return *this;
  }
  auto DefaultAuto() -> F& {
    SetDefault(DefaultValue::Kind::Auto);
    return *this;
  }
  auto SameAs(std::string_view sibling) -> F& {
    SetDefault(DefaultValue::Kind::SameAs).text = sibling;
    return *this;
  }
  auto Counts(std::string_view what) -> F& {
    f_.counts = what;
    return *this;
  }
  auto Doc(std::string_view d) -> F& {
    f_.doc = d;
    return *this;
  }

 private:
  auto SetDefault(DefaultValue::Kind kind) -> DefaultValue& {
    f_.default_value = DefaultValue{};
    f_.default_value->kind = kind;
    return *f_.default_value;
  }
  FieldSchema f_;
};

using ast::DeclKind;

const RecordSchema kGpu{"gpu",
                        {
                            F("memory").Bytes().Required().Doc("HBM capacity"),
                            F("memory_bw").Bandwidth().Required().Doc("HBM bandwidth"),
                            F("bf16").Rate().Required().Doc("dense BF16 tensor peak"),
                            F("fp16").Rate().Doc("dense FP16 tensor peak"),
                            F("fp8").Rate().Doc("dense FP8 tensor peak"),
                            F("fp32").Rate().Doc("FP32 peak"),
                            F("tdp").Power().Doc("board power"),
                        }};

const RecordSchema kFabric{"fabric",
                           {
                               F("kind").Enum({"nvlink", "infiniband", "ethernet"}).Required(),
                               F("bandwidth").Bandwidth().Required().Doc("per port (NVLink: per GPU), one direction"),
                               F("latency").Time().Doc("end-to-end latency of one message"),
                           }};

const RecordSchema kNode{"node",
                         {
                             F("gpu").Ref(DeclKind::Gpu).Required(),
                             F("gpus").Count().Required().Max(1024),
                             F("nvlink").Ref(DeclKind::Fabric).Required().Doc("fabric inside the node"),
                             F("nics").Count().Min(0).Doc("compute NICs per node"),
                             F("cpu_memory").Bytes(),
                             F("cpus").Count().Max(1048576).Doc("logical CPUs (Kubernetes `cpu` units) per node"),
                         }};

const RecordSchema kFatTree{
    "fat_tree",
    {
        F("nodes_per_leaf").Count().Required(),
        F("leaves_per_spine").Count(),
        F("oversubscription").Number().Min(1).DefaultReal(1).Doc("downlink:uplink ratio at a leaf"),
        F("leaf_label").String().Doc("node label whose value names a node's leaf switch"),
        F("spine_label").String().Doc("node label whose value names a node's spine block"),
    }};

const RecordSchema kCluster{
    "cluster",
    {
        F("node").Ref(DeclKind::Node).Required(),
        F("nodes").Count().Required().Max(1048576),
        F("network").Ref(DeclKind::Fabric).Required().Doc("fabric between nodes"),
        F("storage_network").Ref(DeclKind::Fabric),
        F("topology").Record(kFatTree),
        F("labels").List(F("label").String(), 0, 256).Doc("`key=value` node selector labels"),
        F("gpu_hour_price")
            .Number()
            .Min(0)
            .Doc("price of one GPU-hour in `currency`; `plan` then shows the job's cost"),
        F("currency").String().Doc("ISO 4217 code of `gpu_hour_price`'s currency, such as `EUR` (default `USD`)"),
        F("scheduler")
            .Enum({"kueue", "volcano", "default"})
            .DefaultEnum("kueue")
            .Doc("gang scheduler of the Kubernetes cluster"),
        F("node_resources")
            .List(F("resource").String(), 0, 64)
            .Doc("`name=count` extended resources each training pod requests (RDMA device-plugin pools)"),
        F("node_taints")
            .List(F("taint").String(), 0, 64)
            .Doc("`key[=value]:Effect` taints of the nodes, tolerated by the training pods"),
        F("hcas").List(F("hca").String(), 0, 64).Doc("InfiniBand/RoCE adapters NCCL uses (NCCL_IB_HCA)"),
        F("socket_interface")
            .String()
            .Doc("network interface for NCCL's bootstrap and socket traffic (NCCL_SOCKET_IFNAME)"),
        F("pod_networks")
            .List(F("network").String(), 0, 16)
            .Doc("Multus networks attached to the training pods (`name` or `namespace/name`)"),
    }};

const RecordSchema kStorage{
    "storage",
    {
        F("kind").Enum({"ceph", "s3", "minio", "beegfs", "lustre", "nfs", "pvc", "local"}).Required(),
        F("endpoint").String(),
        F("bucket").String(),
        F("mount").String(),
        F("claim").String().Doc("PersistentVolumeClaim name, for kind = pvc"),
        F("capacity").Bytes(),
        F("read_bw").Bandwidth(),
        F("write_bw").Bandwidth(),
        F("credentials").Secret(),
        F("ca_bundle").String().Doc("ConfigMap whose key `ca.crt` holds the CA of an https object store"),
        F("storage_class").String().Doc("StorageClass of the PersistentVolumeClaim, for kind = pvc"),
    }};

const RecordSchema kDataset{
    "dataset",
    {
        F("source").Location().Required(),
        F("tokens").Count().Required(),
        F("shards").Count().Default(1),
        F("format").Enum({"tokens_u16", "tokens_u32"}).DefaultEnum("tokens_u16"),
        F("stage_to").Ref(DeclKind::Storage).Doc("hot tier the shards are copied to before training"),
    }};

const RecordSchema kModel{"model",
                          {
                              F("arch").Enum({"gpt2", "llama"}).Required(),
                              // The limits keep every count the planner multiplies inside 64 bits; they
                              // are far above any model trained so far.
                              F("layers").Count().Required().Max(100000),
                              F("hidden").Count().Required().Max(1048576),
                              F("heads").Count().Required().Max(1048576),
                              F("kv_heads").Count().SameAs("heads").Max(1048576),
                              F("ffn").Count().Max(4194304),
                              F("vocab").Count().Required().Max(100000000),
                              F("seq_len").Count().Required().Max(100000000),
                              F("tied_embeddings").Bool(),
                          }};

const RecordSchema kParallel{
    "parallel",
    {
        F("data").Count().Auto().DefaultAuto(),
        F("tensor").Count().Auto().Default(1),
        F("pipeline").Count().Auto().Default(1),
        F("zero").Count().Min(0).Max(3).Auto().Default(0),
        F("micro_batch").Count().Counts("sequences").Auto().Default(1),
        F("schedule").Enum({"one_f_one_b", "interleaved", "gpipe"}).Auto().DefaultEnum("one_f_one_b"),
        F("virtual_stages").Count().Auto().Default(1),
        F("recompute").Enum({"none", "selective", "full"}).Auto().DefaultEnum("none"),
        F("sequence_parallel").Bool().Auto().DefaultBool(false),
    }};

const RecordSchema kOptimizer{"optimizer",
                              {
                                  F("kind").Enum({"adamw", "sgd"}).DefaultEnum("adamw"),
                                  F("lr").Number().Min(0, true).Doc("peak learning rate"),
                                  F("betas").List(F("beta").Number().Min(0).Max(1), 2, 2),
                                  F("weight_decay").Number().Min(0),
                                  F("warmup").Count().Min(0).Doc("warm-up steps"),
                                  F("schedule").Enum({"cosine", "linear", "constant"}).DefaultEnum("cosine"),
                              }};

const RecordSchema kCheckpoint{
    "checkpoint",
    {
        F("every").CountOrDuration().Doc("a step count or a duration"),
        F("dir").Location(),
        F("keep").Count(),
        F("async").Bool().DefaultBool(false),
        F("export").Location().Doc("cold-tier copy of each kept checkpoint"),
        F("encrypt").Secret().Doc("the Secret whose key `key` encrypts the checkpoints' data files"),
    }};

const RecordSchema kValidation{
    "validation",
    {
        F("data").Ref(DeclKind::Dataset).Required().Doc("held-out data, declared like the training dataset"),
        F("every").Count().Required().Doc("steps between two validations"),
        F("batches").Count().Max(1000000).Default(8).Doc("global batches of held-out data per validation"),
    }};

const RecordSchema kResources{"resources",
                              {
                                  F("cpus").Count().Doc("CPUs each training pod requests"),
                                  F("memory").Bytes().Doc("host memory each training pod requests and is limited to"),
                                  F("shm").Bytes().Doc("size of the pod's /dev/shm (counts against `memory`)"),
                              }};

const RecordSchema kPod{
    "pod",
    {
        F("image_pull_secrets").List(F("secret").String(), 0, 64).Doc("Secrets the kubelet pulls the images with"),
        F("env")
            .List(F("variable").String(), 0, 256)
            .Doc("`NAME=value` in the trainers' environment; it overrides a value aviflowc sets"),
        F("labels").List(F("label").String(), 0, 64).Doc("`key=value` labels on every object and pod of the job"),
        F("annotations").List(F("annotation").String(), 0, 64).Doc("`key=value` annotations on every pod of the job"),
        F("qos")
            .Enum({"burstable", "guaranteed"})
            .DefaultEnum("burstable")
            .Doc("`guaranteed`: CPU and memory limits equal to the requests"),
    }};

const RecordSchema kStaging{
    "staging",
    {
        F("copiers").Count().Max(4096).Doc("parallel copier pods of the stage-in step"),
        F("cleanup").Bool().DefaultBool(false).Doc("delete the staged copy when the workflow ends"),
    }};

const RecordSchema kElastic{
    "elastic",
    {
        F("min_nodes").Count().Min(1).Max(1048576).Required().Doc("the fewest nodes the job trains on"),
        F("max_nodes")
            .Count()
            .Min(1)
            .Max(1048576)
            .Doc("the most nodes the job trains on; default the job's own (`gpus` over the node's GPUs), at most the "
                 "cluster's"),
    }};

const RecordSchema kTrainer{
    "trainer",
    {
        F("kind")
            .Enum({"avf", "torchtitan", "megatron"})
            .DefaultEnum("avf")
            .Doc("the program the training pods run: avf-run, or the plan translated for torchtitan or Megatron-LM"),
        F("version").String().Doc("the trainer's release the translation is for (default: the one aviflowc pins)"),
        F("entry").String().Doc("torchtitan's module or Megatron-LM's script in the image (default: docs/trainers.md)"),
    }};

const RecordSchema kMonitoring{
    "monitoring",
    {
        F("port").Count().Min(1024).Max(65535).Default(9400).Doc(
            "avf-run's metrics port of local rank 0; local rank i serves on `port` + i"),
        F("alerts").Bool().DefaultBool(true).Doc("write the PrometheusRule of the job's alerts"),
        F("dashboard").Bool().DefaultBool(false).Doc("write a Grafana dashboard as a ConfigMap"),
        F("stall_factor")
            .Number()
            .Min(1)
            .Max(1000)
            .DefaultReal(10)
            .Doc("no step for this many predicted step times (at least 5 minutes) is a stall"),
        F("mfu_fraction")
            .Number()
            .Min(0, true)
            .Max(1)
            .DefaultReal(0.5)
            .Doc("MFU below this fraction of the prediction for `mfu_for` alerts"),
        F("mfu_for").Time().DefaultReal(1800).Doc("how long MFU stays low before it alerts"),
        F("checkpoint_factor")
            .Number()
            .Min(1)
            .Max(1000)
            .DefaultReal(3)
            .Doc("no commit for this many checkpoint intervals alerts"),
    }};

const RecordSchema kJob{
    "job",
    {
        F("model").Ref(DeclKind::Model).Required(),
        F("data").Ref(DeclKind::Dataset).Required(),
        F("cluster").Ref(DeclKind::Cluster).Required(),
        F("gpus").Count().Required().Max(1048576),
        F("precision").Enum({"bf16", "fp16", "fp32"}).DefaultEnum("bf16"),
        F("attention")
            .Enum({"flash", "materialized"})
            .DefaultEnum("flash")
            .Doc("`flash`: the s x s attention matrix is never stored (FlashAttention)"),
        F("parallel").Record(kParallel),
        F("batch").Count().Counts("sequences").Required().Max(16777216).Doc("global batch, in sequences"),
        F("steps").Count(),
        F("tokens").Count(),
        F("epochs").Number().Min(0, true).Max(1000000),
        F("optimizer").Record(kOptimizer),
        F("checkpoint").Record(kCheckpoint),
        F("init").Location().Doc("pretrained weights: a Hugging Face transformers folder"),
        F("validation").Record(kValidation),
        F("image").String(),
        F("namespace").String(),
        F("queue").String(),
        F("priority").String(),
        F("target").Enum({"kubeflow", "jobset", "slurm"}).DefaultEnum("kubeflow"),
        F("trainer").Record(kTrainer),
        F("tools_image").String().Doc("image with rclone and a POSIX shell for staging and export (default: `image`)"),
        F("max_restarts").Count().Min(0).Max(1000).Default(3).Doc("whole-job restarts before the run fails"),
        F("device")
            .Enum({"gpu", "cpu"})
            .DefaultEnum("gpu")
            .Doc("where avf-run trains in the pods: one rank per GPU, or the same ranks on the nodes' CPUs"),
        F("preflight")
            .Bool()
            .DefaultBool(true)
            .Doc("check the nodes at every start of the training pods: GPUs, InfiniBand ports, an all-reduce"),
        F("deadline")
            .Time()
            .Doc("longest a workflow of the job may run; default twice the predicted time to train, "
                 "plus a day"),
        F("resources").Record(kResources),
        F("staging").Record(kStaging),
        F("pod").Record(kPod),
        F("monitoring").Record(kMonitoring),
        F("elastic").Record(kElastic),
    }};

auto FormatNumber(double v) -> std::string { return fmt::format("{}", v); }

// The elements of a list, in the plural: "strings", "numbers".
auto DescribeElements(const FieldSchema& element) -> std::string {
  switch (element.type) {
    case FieldType::String: return "strings";
    case FieldType::Quantity:
      if (element.dim.IsCount()) return element.integer ? "whole numbers" : "numbers";
      return "values in " + units::DimensionName(element.dim);
    default: return fmt::format("values ({})", DescribeType(element));
  }
}

}  // namespace

auto JoinAlternatives(const std::vector<std::string_view>& words) -> std::string {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += fmt::format("`{}`", words[i]);
  }
  return out;
}

auto RecordSchema::Find(std::string_view field) const -> const FieldSchema* {
  for (const FieldSchema& f : fields) {
    if (f.name == field) return &f;
  }
  return nullptr;
}

auto RecordSchema::FieldNames() const -> std::vector<std::string> {
  std::vector<std::string> names;
  for (const FieldSchema& f : fields) names.emplace_back(f.name);
  return names;
}

auto SchemaOf(ast::DeclKind kind) -> const RecordSchema& {
  switch (kind) {
    case DeclKind::Gpu: return kGpu;
    case DeclKind::Fabric: return kFabric;
    case DeclKind::Node: return kNode;
    case DeclKind::Cluster: return kCluster;
    case DeclKind::Storage: return kStorage;
    case DeclKind::Dataset: return kDataset;
    case DeclKind::Model: return kModel;
    case DeclKind::Job: return kJob;
  }
  return kJob;
}

auto BuiltinRecord(std::string_view type) -> const RecordSchema* { return type == kFatTree.name ? &kFatTree : nullptr; }

auto DescribeType(const FieldSchema& field) -> std::string {
  switch (field.type) {
    case FieldType::Quantity:
      if (field.dim.IsCount()) return field.integer ? "a whole number" : "a number";
      return units::DimensionName(field.dim);
    case FieldType::String: return "a string";
    case FieldType::Bool: return "`true` or `false`";
    case FieldType::Enum: return "one of " + JoinAlternatives(field.enum_values);
    case FieldType::Ref: return fmt::format("a `{}`", ast::KeywordOf(field.ref_kind));
    case FieldType::Location: return "a location (`STORAGE / \"path\"`)";
    case FieldType::Secret: return "`secret(\"NAME\")`";
    case FieldType::Record: return fmt::format("a `{}` record", field.record->name);
    case FieldType::List: return "a list of " + DescribeElements(*field.element);
    case FieldType::CountOrDuration: return "a step count or a duration";
  }
  return "a value";
}

auto DescribeRange(const FieldSchema& field) -> std::string {
  if (field.min && field.max && field.min_exclusive) {
    return fmt::format("greater than {} and at most {}", FormatNumber(*field.min), FormatNumber(*field.max));
  }
  if (field.min && field.max)
    return fmt::format("between {} and {}", FormatNumber(*field.min), FormatNumber(*field.max));
  if (field.min)
    return fmt::format("{} {}", field.min_exclusive ? "greater than" : "at least", FormatNumber(*field.min));
  if (field.max) return fmt::format("at most {}", FormatNumber(*field.max));
  return "in range";
}

}  // namespace avf::sema
