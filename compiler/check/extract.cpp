// sema::Program -> JobSpec: follows references (job -> model, dataset,
// cluster -> node -> gpu, fabrics, storage) and reads plain numbers. Sema has
// already checked types, units and required fields, so a missing value here
// means the field is optional and absent.
#include <algorithm>
#include <cmath>

#include "check/extract.h"
#include "cost/counts.h"

namespace avf::check {

namespace {

using sema::Decl;
using sema::FieldValue;
using sema::Program;
using sema::RecordValue;
using sema::Value;

auto Field(const RecordValue& r, std::string_view name) -> const Value* {
  const FieldValue* f = r.Find(name);
  return f ? &f->value : nullptr;
}

auto Number(const RecordValue& r, std::string_view name) -> std::optional<double> {
  const Value* v = Field(r, name);
  if (!v || v->kind != Value::Kind::Quantity) return std::nullopt;
  return v->quantity.real();
}

auto Integer(const RecordValue& r, std::string_view name) -> std::optional<int64_t> {
  const Value* v = Field(r, name);
  if (!v || v->kind != Value::Kind::Quantity) return std::nullopt;
  if (v->quantity.is_integer()) return v->quantity.integer();
  return static_cast<int64_t>(std::llround(v->quantity.real()));
}

auto Text(const RecordValue& r, std::string_view name) -> std::string {
  const Value* v = Field(r, name);
  if (!v) return "";
  bool textual = v->kind == Value::Kind::String || v->kind == Value::Kind::Enum || v->kind == Value::Kind::Secret;
  return textual ? v->text() : "";
}

auto Flag(const RecordValue& r, std::string_view name) -> bool {
  const Value* v = Field(r, name);
  return v && v->kind == Value::Kind::Bool && v->boolean;
}

auto Ref(const Program& p, const RecordValue& r, std::string_view name) -> const Decl* {
  const Value* v = Field(r, name);
  return v && v->kind == Value::Kind::Ref ? &p.decls[v->decl] : nullptr;
}

auto Sub(const RecordValue& r, std::string_view name) -> const RecordValue* {
  const Value* v = Field(r, name);
  return v && v->kind == Value::Kind::Record ? v->record() : nullptr;
}

// The written value's range, else `fallback` (a default has no range).
auto RangeOf(const RecordValue& r, std::string_view name, llvm::SMRange fallback) -> llvm::SMRange {
  const Value* v = Field(r, name);
  return v && v->range.isValid() ? v->range : fallback;
}

auto StorageLocation(const Decl& storage, std::string path) -> Location {
  Location loc;
  loc.storage = storage.name;
  loc.storage_kind = FromName(Text(storage.fields, "kind"), kStorageKinds).value_or(StorageKind::Local);
  loc.path = std::move(path);
  loc.endpoint = Text(storage.fields, "endpoint");
  loc.bucket = Text(storage.fields, "bucket");
  loc.mount = Text(storage.fields, "mount");
  loc.claim = Text(storage.fields, "claim");
  loc.credentials = Text(storage.fields, "credentials");
  loc.ca_bundle = Text(storage.fields, "ca_bundle");
  loc.storage_class = Text(storage.fields, "storage_class");
  loc.capacity = Number(storage.fields, "capacity");
  loc.read_bw = Number(storage.fields, "read_bw");
  loc.write_bw = Number(storage.fields, "write_bw");
  loc.decl_range = storage.name_range;
  return loc;
}

auto LocationOf(const Program& p, const RecordValue& r, std::string_view name) -> std::optional<Location> {
  const Value* v = Field(r, name);
  if (!v || v->kind != Value::Kind::Location) return std::nullopt;
  return StorageLocation(p.decls[v->decl], v->text());
}

auto ModelOf(const Decl& m, SpecRanges& at) -> cost::ModelShape {
  cost::ModelShape shape;
  const RecordValue& f = m.fields;
  shape.arch = FromName(Text(f, "arch"), cost::kArchs).value_or(cost::Arch::Gpt2);
  shape.layers = Integer(f, "layers").value_or(1);
  shape.hidden = Integer(f, "hidden").value_or(1);
  shape.heads = Integer(f, "heads").value_or(1);
  shape.kv_heads = Integer(f, "kv_heads").value_or(shape.heads);
  shape.ffn = Integer(f, "ffn").value_or(cost::DefaultFfn(shape.arch, shape.hidden));
  shape.vocab = Integer(f, "vocab").value_or(1);
  shape.seq_len = Integer(f, "seq_len").value_or(1);
  // GPT-2 ties its embeddings; Llama does not (the reference checkpoints).
  const Value* tied = Field(f, "tied_embeddings");
  shape.tied_embeddings = tied && tied->kind == Value::Kind::Bool ? tied->boolean : shape.arch == cost::Arch::Gpt2;
  at.model_decl = m.name_range;
  at.heads = RangeOf(f, "heads", m.name_range);
  at.kv_heads = RangeOf(f, "kv_heads", at.heads);
  at.layers = RangeOf(f, "layers", m.name_range);
  at.vocab = RangeOf(f, "vocab", m.name_range);
  return shape;
}

auto PeakFor(const Decl& gpu, cost::Precision p) -> double {
  std::string_view field = p == cost::Precision::Fp32 ? "fp32" : p == cost::Precision::Fp16 ? "fp16" : "bf16";
  // A GPU that leaves out its fp16 rate runs fp16 at the bf16 rate.
  auto rate = Number(gpu.fields, field);
  if (!rate && p == cost::Precision::Fp16) rate = Number(gpu.fields, "bf16");
  return rate.value_or(0);
}

void ReadCluster(const Program& p, const Decl& cluster, JobSpec& spec) {
  const RecordValue& c = cluster.fields;
  cost::Hardware& hw = spec.hardware;
  spec.cluster_name = cluster.name;
  spec.at.cluster_decl = cluster.name_range;
  spec.at.nodes = RangeOf(c, "nodes", cluster.name_range);
  hw.nodes = Integer(c, "nodes").value_or(1);
  spec.price_per_gpu_hour = Number(c, "gpu_hour_price");
  if (std::string currency = Text(c, "currency"); !currency.empty()) spec.currency = currency;
  if (const RecordValue* tree = Sub(c, "topology")) {
    hw.nodes_per_leaf = Integer(*tree, "nodes_per_leaf").value_or(0);
    hw.leaves_per_spine = Integer(*tree, "leaves_per_spine").value_or(0);
    hw.oversubscription = Number(*tree, "oversubscription").value_or(1);
    spec.at.topology = RangeOf(c, "topology", cluster.name_range);
  }
  if (const Decl* net = Ref(p, c, "network")) {
    spec.network_name = net->name;
    hw.nic_bandwidth = Number(net->fields, "bandwidth").value_or(0);
    hw.network_latency = Number(net->fields, "latency").value_or(0);
  }
  const Decl* node = Ref(p, c, "node");
  if (!node) return;
  spec.node_name = node->name;
  spec.at.node_decl = node->name_range;
  spec.at.node_gpus = RangeOf(node->fields, "gpus", node->name_range);
  hw.gpus_per_node = Integer(node->fields, "gpus").value_or(1);
  hw.nics_per_node = Integer(node->fields, "nics").value_or(hw.gpus_per_node);
  if (const Decl* nvlink = Ref(p, node->fields, "nvlink")) {
    hw.nvlink_bandwidth = Number(nvlink->fields, "bandwidth").value_or(0);
    hw.nvlink_latency = Number(nvlink->fields, "latency").value_or(0);
  }
  if (const Decl* gpu = Ref(p, node->fields, "gpu")) {
    spec.gpu_name = gpu->name;
    spec.at.gpu_decl = gpu->name_range;
    hw.gpu_memory = Number(gpu->fields, "memory").value_or(0);
    hw.hbm_bandwidth = Number(gpu->fields, "memory_bw").value_or(0);
    hw.peak_flops = PeakFor(*gpu, spec.workload.precision);
  }
}

// A dataset declaration's fields; the staged copy's path is the dataset's
// name under the hot tier's root.
auto DatasetOf(const Program& p, const Decl& d) -> DatasetSpec {
  DatasetSpec ds;
  const RecordValue& f = d.fields;
  ds.name = d.name;
  ds.tokens = Integer(f, "tokens").value_or(0);
  ds.shards = Integer(f, "shards").value_or(1);
  ds.format = FromName(Text(f, "format"), kTokenFormats).value_or(TokenFormat::U16);
  ds.token_bytes = TokenBytes(ds.format);
  if (auto source = LocationOf(p, f, "source")) ds.source = *source;
  if (const Decl* hot = Ref(p, f, "stage_to")) ds.stage_to = StorageLocation(*hot, d.name);
  return ds;
}

void ReadDataset(const Program& p, const Decl& d, JobSpec& spec) {
  const RecordValue& f = d.fields;
  spec.dataset = DatasetOf(p, d);
  spec.at.dataset_decl = d.name_range;
  spec.at.dataset_tokens = RangeOf(f, "tokens", d.name_range);
  spec.at.format = RangeOf(f, "format", d.name_range);
  spec.at.dataset_source = RangeOf(f, "source", d.name_range);
  if (const Decl* hot = Ref(p, f, "stage_to")) {
    spec.at.stage_to = RangeOf(f, "stage_to", d.name_range);
    spec.at.hot_decl = hot->name_range;
    spec.at.hot_capacity = RangeOf(hot->fields, "capacity", hot->name_range);
  }
}

// `validation { data = DATASET; every = N; batches = M }`; absent when not
// written (its fields are required) or when its dataset is in error.
void ReadValidation(const Program& p, const Decl& job, JobSpec& spec) {
  const RecordValue* r = Sub(job.fields, "validation");
  const Decl* data = r ? Ref(p, *r, "data") : nullptr;
  if (!data) return;
  ValidationSpec v;
  v.dataset = DatasetOf(p, *data);
  v.every = Integer(*r, "every").value_or(1);
  v.batches = Integer(*r, "batches").value_or(8);
  spec.validation = std::move(v);
  SpecRanges& at = spec.at;
  at.validation_data = RangeOf(*r, "data", RangeOf(job.fields, "validation", job.name_range));
  at.validation_source = RangeOf(data->fields, "source", data->name_range);
  at.validation_format = RangeOf(data->fields, "format", data->name_range);
  at.validation_stage_to = RangeOf(data->fields, "stage_to", data->name_range);
}

auto ChoiceOf(const RecordValue* par, std::string_view name, llvm::SMRange fallback) -> IntChoice {
  IntChoice c;
  c.range = fallback;
  if (!par) return c;
  const FieldValue* f = par->Find(name);
  if (!f) return c;
  c.written = f->origin != sema::Origin::Defaulted;
  if (f->value.range.isValid()) c.range = f->value.range;
  if (f->value.kind == Value::Kind::Quantity) c.value = Integer(*par, name);
  return c;
}

template <typename T, typename Map>
auto EnumChoiceOf(const RecordValue* par, std::string_view name, llvm::SMRange fallback, Map map) -> EnumChoice<T> {
  EnumChoice<T> c;
  c.range = fallback;
  if (!par) return c;
  const FieldValue* f = par->Find(name);
  if (!f) return c;
  c.written = f->origin != sema::Origin::Defaulted;
  if (f->value.range.isValid()) c.range = f->value.range;
  if (f->value.kind == Value::Kind::Enum || f->value.kind == Value::Kind::Bool) c.value = map(f->value);
  return c;
}

void ReadParallel(const RecordValue& job, llvm::SMRange fallback, ParallelChoices& out) {
  const RecordValue* par = Sub(job, "parallel");
  out.record_range = RangeOf(job, "parallel", fallback);
  llvm::SMRange at = out.record_range;
  out.data = ChoiceOf(par, "data", at);
  out.tensor = ChoiceOf(par, "tensor", at);
  out.pipeline = ChoiceOf(par, "pipeline", at);
  out.virtual_stages = ChoiceOf(par, "virtual_stages", at);
  out.zero = ChoiceOf(par, "zero", at);
  out.micro_batch = ChoiceOf(par, "micro_batch", at);
  out.schedule = EnumChoiceOf<cost::Schedule>(par, "schedule", at, [](const Value& v) {
    return FromName(v.text(), cost::kSchedules).value_or(cost::Schedule::OneFOneB);
  });
  out.recompute = EnumChoiceOf<cost::Recompute>(par, "recompute", at, [](const Value& v) {
    return FromName(v.text(), cost::kRecomputes).value_or(cost::Recompute::None);
  });
  out.sequence_parallel = EnumChoiceOf<bool>(par, "sequence_parallel", at, [](const Value& v) { return v.boolean; });
}

void ReadOptimizer(const RecordValue& job, OptimizerSpec& o) {
  const RecordValue* r = Sub(job, "optimizer");
  if (!r) return;
  o.kind = FromName(Text(*r, "kind"), cost::kOptimizerKinds).value_or(cost::OptimizerKind::AdamW);
  o.lr = Number(*r, "lr");
  o.weight_decay = Number(*r, "weight_decay");
  o.warmup = Integer(*r, "warmup").value_or(0);
  o.schedule = FromName(Text(*r, "schedule"), kLrSchedules).value_or(o.schedule);
  const Value* betas = Field(*r, "betas");
  if (betas && betas->kind == Value::Kind::List && betas->list().size() == 2) {
    o.betas = {betas->list()[0].quantity.real(), betas->list()[1].quantity.real()};
  }
}

void ReadCheckpoint(const Program& p, const RecordValue& job, CheckpointSpec& c, SpecRanges& at) {
  // The schema gives every job a defaulted checkpoint record; only a written
  // (or inherited) one turns checkpoints on.
  const FieldValue* written = job.Find("checkpoint");
  const RecordValue* r = Sub(job, "checkpoint");
  if (!r || !written || written->origin == sema::Origin::Defaulted) return;
  c.enabled = true;
  if (const Value* every = Field(*r, "every"); every && every->kind == Value::Kind::Quantity) {
    if (every->quantity.dimension().IsCount()) c.every_steps = Integer(*r, "every");
    else c.every_seconds = every->quantity.real();
  }
  c.dir = LocationOf(p, *r, "dir");
  c.export_to = LocationOf(p, *r, "export");
  c.keep = Integer(*r, "keep");
  c.async = Flag(*r, "async");
  c.encrypt_secret = Text(*r, "encrypt");
  at.checkpoint_dir = RangeOf(*r, "dir", RangeOf(job, "checkpoint", at.gpus));
  at.encrypt = RangeOf(*r, "encrypt", at.checkpoint_dir);
  at.checkpoint_keep = RangeOf(*r, "keep", at.checkpoint_dir);
}

// Optimizer steps from whichever of steps / tokens / epochs the job sets.
void ReadLength(const RecordValue& f, JobSpec& spec, llvm::SMRange fallback) {
  double per_step = static_cast<double>(spec.workload.global_batch) * static_cast<double>(spec.workload.model.seq_len);
  for (LengthField field : kLengthFields) {
    std::string_view name = Name(field);
    auto value = Number(f, name);
    if (!value) continue;
    spec.length_field = field;
    spec.at.length = RangeOf(f, name, fallback);
    double tokens = field == LengthField::Tokens ? *value : *value * static_cast<double>(spec.dataset.tokens);
    spec.requested_tokens = field == LengthField::Steps ? *value * per_step : tokens;
    // Clamped so that absurd lengths stay representable (they are reported
    // by the dataset checks, not by undefined behaviour here).
    double steps = field == LengthField::Steps ? *value : std::ceil(per_step > 0 ? tokens / per_step : 0);
    spec.steps = static_cast<int64_t>(std::min(steps, 1e18));
    return;
  }
}

auto WrittenText(const RecordValue& r, std::string_view name, llvm::SMRange fallback) -> Written {
  return {Text(r, name), RangeOf(r, name, fallback)};
}

auto WrittenList(const RecordValue& r, std::string_view name, llvm::SMRange fallback) -> std::vector<Written> {
  std::vector<Written> out;
  const Value* list = Field(r, name);
  if (!list || list->kind != Value::Kind::List) return out;
  for (const Value& v : list->list()) out.push_back({v.text(), v.range.isValid() ? v.range : fallback});
  return out;
}

void ReadDeployCluster(const Program& p, const Decl& cluster, DeploySpec& d) {
  const RecordValue& c = cluster.fields;
  llvm::SMRange at = cluster.name_range;
  d.scheduler = FromName(Text(c, "scheduler"), kSchedulers).value_or(d.scheduler);
  d.node_resources = WrittenList(c, "node_resources", at);
  d.node_taints = WrittenList(c, "node_taints", at);
  d.labels = WrittenList(c, "labels", at);
  d.hcas = WrittenList(c, "hcas", at);
  d.socket_interface = WrittenText(c, "socket_interface", at);
  d.pod_networks = WrittenList(c, "pod_networks", at);
  if (const RecordValue* tree = Sub(c, "topology")) {
    d.leaf_label = WrittenText(*tree, "leaf_label", RangeOf(c, "topology", at));
    d.spine_label = WrittenText(*tree, "spine_label", RangeOf(c, "topology", at));
  }
  if (const Decl* net = Ref(p, c, "network")) d.network_kind = FromName(Text(net->fields, "kind"), kFabricKinds);
  if (const Decl* node = Ref(p, c, "node")) {
    d.node_cpus = Integer(node->fields, "cpus");
    d.node_memory = Number(node->fields, "cpu_memory");
    d.node_cpus_range = RangeOf(node->fields, "cpus", node->name_range);
    d.node_memory_range = RangeOf(node->fields, "cpu_memory", node->name_range);
    // A figure the user wrote (their node, an override, an inline instance)
    // is theirs; one inherited unchanged from a stdlib node is the stdlib's.
    auto in_stdlib = [&](std::string_view field) {
      const FieldValue* f = node->fields.Find(field);
      return f && f->origin != sema::Origin::Defaulted && p.decls[f->written_in].in_stdlib;
    };
    d.node_cpus_in_stdlib = d.node_cpus && in_stdlib("cpus");
    d.node_memory_in_stdlib = d.node_memory && in_stdlib("cpu_memory");
    const Decl* reference = node;
    while (!reference->in_stdlib && reference->base) reference = &p.decls[*reference->base];
    if (reference->in_stdlib) {
      d.reference_node = reference->name;
      d.reference_node_use = node->in_stdlib ? RangeOf(c, "node", at) : node->name_range;
    }
  }
}

void ReadDeployJob(const Decl& job, DeploySpec& d) {
  const RecordValue& f = job.fields;
  llvm::SMRange at = job.name_range;
  d.image = WrittenText(f, "image", at);
  d.tools_image = WrittenText(f, "tools_image", at);
  d.k8s_namespace = WrittenText(f, "namespace", at);
  d.queue = WrittenText(f, "queue", at);
  d.priority = WrittenText(f, "priority", at);
  d.max_restarts = Integer(f, "max_restarts").value_or(3);
  d.preflight = Flag(f, "preflight");
  d.on_cpu = Text(f, "device") == "cpu";
  d.device_range = RangeOf(f, "device", at);
  d.deadline = Number(f, "deadline");
  d.deadline_range = RangeOf(f, "deadline", at);
  if (const RecordValue* r = Sub(f, "resources")) {
    llvm::SMRange rec = RangeOf(f, "resources", at);
    d.cpus = Integer(*r, "cpus");
    d.memory = Number(*r, "memory");
    d.shm = Number(*r, "shm");
    d.cpus_range = RangeOf(*r, "cpus", rec);
    d.memory_range = RangeOf(*r, "memory", rec);
    d.shm_range = RangeOf(*r, "shm", rec);
  }
  if (const RecordValue* s = Sub(f, "staging")) {
    d.copiers = Integer(*s, "copiers");
    d.cleanup_staged = Flag(*s, "cleanup");
  }
  if (const RecordValue* pod = Sub(f, "pod")) {
    llvm::SMRange rec = RangeOf(f, "pod", at);
    d.image_pull_secrets = WrittenList(*pod, "image_pull_secrets", rec);
    d.extra_env = WrittenList(*pod, "env", rec);
    d.extra_labels = WrittenList(*pod, "labels", rec);
    d.extra_annotations = WrittenList(*pod, "annotations", rec);
    d.guaranteed_qos = Text(*pod, "qos") == "guaranteed";
    d.qos_range = RangeOf(*pod, "qos", rec);
  }
}

void ReadMonitoring(const Decl& job, MonitoringSpec& m) {
  m.port_range = job.name_range;
  const RecordValue* r = Sub(job.fields, "monitoring");
  if (!r) return;
  // A record the job does not write is its defaults, at the job's name.
  llvm::SMRange record = RangeOf(job.fields, "monitoring", job.name_range);
  if (record.Start != job.name_range.Start) m.written = record;
  m.port = Integer(*r, "port").value_or(m.port);
  m.port_range = RangeOf(*r, "port", RangeOf(job.fields, "monitoring", job.name_range));
  m.alerts = Flag(*r, "alerts");
  m.dashboard = Flag(*r, "dashboard");
  m.stall_factor = Number(*r, "stall_factor").value_or(m.stall_factor);
  m.mfu_fraction = Number(*r, "mfu_fraction").value_or(m.mfu_fraction);
  m.mfu_for = Number(*r, "mfu_for").value_or(m.mfu_for);
  m.checkpoint_factor = Number(*r, "checkpoint_factor").value_or(m.checkpoint_factor);
}

void ReadTrainer(const Decl& job, TrainerSpec& t) {
  const RecordValue* r = Sub(job.fields, "trainer");
  t.kind_range = job.name_range;
  if (!r) return;
  llvm::SMRange rec = RangeOf(job.fields, "trainer", job.name_range);
  t.kind = FromName(Text(*r, "kind"), kTrainerKinds).value_or(TrainerKind::Avf);
  t.kind_range = RangeOf(*r, "kind", rec);
  t.version = WrittenText(*r, "version", rec);
  t.entry = WrittenText(*r, "entry", rec);
}

void ReadElastic(const Decl& job, std::optional<ElasticSpec>& e) {
  const RecordValue* r = Sub(job.fields, "elastic");
  llvm::SMRange record = RangeOf(job.fields, "elastic", job.name_range);
  if (!r || record.Start == job.name_range.Start) return;
  e.emplace();
  e->range = record;
  e->min_nodes = Integer(*r, "min_nodes").value_or(1);
  e->max_nodes = Integer(*r, "max_nodes");
  e->min_range = RangeOf(*r, "min_nodes", record);
  e->max_range = RangeOf(*r, "max_nodes", record);
}

}  // namespace

auto ExtractJob(const Program& p, const Decl& job) -> JobSpec {
  JobSpec spec;
  const RecordValue& f = job.fields;
  spec.name = job.name;
  spec.at.gpus = RangeOf(f, "gpus", job.name_range);
  spec.at.batch = RangeOf(f, "batch", job.name_range);
  spec.at.precision = RangeOf(f, "precision", job.name_range);
  spec.at.attention = RangeOf(f, "attention", job.name_range);
  spec.at.model = RangeOf(f, "model", job.name_range);
  spec.workload.gpus = Integer(f, "gpus").value_or(1);
  spec.workload.global_batch = Integer(f, "batch").value_or(1);
  spec.workload.precision = FromName(Text(f, "precision"), cost::kPrecisions).value_or(cost::Precision::Bf16);
  spec.workload.attention = FromName(Text(f, "attention"), cost::kAttentions).value_or(cost::Attention::Flash);
  spec.name_range = job.name_range;
  if (const Decl* model = Ref(p, f, "model")) {
    spec.model_name = model->name;
    spec.workload.model = ModelOf(*model, spec.at);
  }
  if (const Decl* cluster = Ref(p, f, "cluster")) {
    ReadCluster(p, *cluster, spec);
    ReadDeployCluster(p, *cluster, spec.deploy);
  }
  if (const Decl* data = Ref(p, f, "data")) ReadDataset(p, *data, spec);
  ReadParallel(f, job.name_range, spec.parallel);
  ReadOptimizer(f, spec.optimizer);
  spec.workload.optimizer = spec.optimizer.kind;
  ReadCheckpoint(p, f, spec.checkpoint, spec.at);
  spec.init = LocationOf(p, f, "init");
  spec.at.init = RangeOf(f, "init", job.name_range);
  ReadValidation(p, job, spec);
  ReadLength(f, spec, job.name_range);
  spec.target = FromName(Text(f, "target"), kTargets);
  ReadTrainer(job, spec.trainer);
  ReadElastic(job, spec.elastic);
  ReadDeployJob(job, spec.deploy);
  ReadMonitoring(job, spec.deploy.monitoring);
  return spec;
}

}  // namespace avf::check
