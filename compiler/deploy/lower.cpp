// Identity, pod resources, networking and placement of a deployment; storage
// is in lower_storage.cpp.
#include "deploy/lower.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "check/check.h"
#include "deploy/k8s_names.h"
#include "deploy/lower_context.h"
#include "plan_format/launch.h"

namespace avf::deploy {

namespace {

using diag::DiagId;

// Object names get suffixes (`-worker-127`, `-plan`, `-node-0-3-abcde`, Argo's
// pod hashes), so the base name keeps room for them inside 63 characters.
constexpr size_t kMaxBaseName = 40;
// Without an explicit request a pod takes this share of the node's CPUs and
// memory, leaving the rest to the kubelet and system daemons.
constexpr double kNodeShare = 0.9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The token Secret is named after the job (docs/deploy.md, "Names and
// labels"), so that a Secret made by hand for `kubectl apply -f job.yaml`
// and the workflow's make-token step agree on it; 40 + 11 characters.
constexpr const char* kTokenSecretSuffix = "-rendezvous";
// A preflight all-reduce below this share of the expected bus bandwidth fails.
constexpr double kPreflightShare = 0.5;

void ReportInvalid(LowerContext& c, const check::Written& w, const std::string& what, const std::string& why) {
  c.Report(DiagId::InvalidKubernetesValue, w.range, Printable(w.value), what, Printable(why));
}

// `registry/name:tag@sha256:HEX` pins the image; without `@` there is nothing to check.
auto IsImageDigestValid(const std::string& image) -> bool {
  size_t at = image.find('@');
  if (at == std::string::npos) return true;
  std::string_view digest = std::string_view(image).substr(at + 1);
  if (digest.substr(0, 7) != "sha256:" || digest.size() != 7 + 64) return false;
  return digest.substr(7).find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

auto IsPartitionName(const std::string& name) -> bool {
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
           ch == '.' || ch == ',';
  });
}

// Namespace, queue and priority class, as Kubernetes validates them.
void CheckNames(LowerContext& c) {
  const check::DeploySpec& d = c.job.deploy;
  if (!d.k8s_namespace.value.empty() && !IsDns1123Label(d.k8s_namespace.value)) {
    ReportInvalid(c, d.k8s_namespace, "Kubernetes namespace",
                  "lower-case letters, digits and `-`, at most 63, starting and ending with a letter or digit");
  }
  if (!d.queue.value.empty() && c.out.target != Target::Slurm) {
    std::string why = LabelValueProblem(d.queue.value);
    if (!why.empty()) ReportInvalid(c, d.queue, "queue name (a label value)", why);
  }
  // On Slurm the queue is the partition of an `#SBATCH` line of the script.
  if (!d.queue.value.empty() && c.out.target == Target::Slurm && !IsPartitionName(d.queue.value)) {
    ReportInvalid(c, d.queue, "Slurm partition name",
                  "letters, digits, `-`, `_` and `.`, with `,` between several partitions");
  }
  if (!d.priority.value.empty() && c.out.target != Target::Slurm && !IsDns1123Subdomain(d.priority.value)) {
    ReportInvalid(c, d.priority, "PriorityClass name", "lower-case letters, digits, `-` and `.`");
  }
}

void LowerIdentity(LowerContext& c, std::optional<Target> target) {
  const check::JobSpec& j = c.job;
  Deployment& o = c.out;
  o.job = j.name;
  o.target = target.value_or(j.target.value_or(Target::Kubeflow));
  o.scheduler = j.deploy.scheduler;
  std::optional<std::string> name = Dns1035Label(j.name, kMaxBaseName);
  if (!name) {
    c.Report(DiagId::NoKubernetesName, j.name_range, j.name)
        .Help("Kubernetes names start with a letter; rename the job, e.g. `job run_" +
              j.name.substr(std::min(j.name.find_first_not_of('_'), j.name.size())) + "`");
    return;
  }
  o.name = *name;
  // Named by its content: a changed plan is a new ConfigMap, which only the
  // pods of a new run mount; the running job's stays as it was.
  o.configmap = o.name + "-plan-" + o.plan_sha256.substr(0, 10);
  o.service_account = o.name + "-workflow";
  // Explicit, so that RoleBinding subjects and cleanup name it.
  o.k8s_namespace = j.deploy.k8s_namespace.value.empty() ? "default" : j.deploy.k8s_namespace.value;
  o.image = j.deploy.image.value;
  o.tools_image = j.deploy.tools_image.value.empty() ? o.image : j.deploy.tools_image.value;
  o.queue = j.deploy.queue.value;
  o.priority = j.deploy.priority.value;
  o.max_restarts = j.deploy.max_restarts;
  // Stage-in, queueing and restarts all count against the deadline: the
  // default leaves the prediction twice its time and a day.
  double deadline = j.deploy.deadline.value_or(2 * c.plan.totals.seconds + 86400);
  o.deadline_seconds = static_cast<int64_t>(std::ceil(std::min(deadline, 1e12)));
  o.deadline_from_job = j.deploy.deadline.has_value();
  if (o.target != Target::Slurm && deadline < c.plan.totals.seconds) {
    c.Report(DiagId::DeadlineBeforeTraining, j.deploy.deadline_range, j.name, deadline / 3600,
             c.plan.totals.seconds / 3600)
        .Help("raise `deadline`, or leave it out for twice the predicted time plus a day");
  }
  o.nodes = c.plan.nodes_used;
  // The operator fails the job once the pods' restarts reach the limit, and
  // one incident restarts every pod once: max_restarts incidents must stay below it.
  o.backoff_limit = o.max_restarts * o.nodes + 1;
  o.procs_per_node = c.plan.ranks_per_node;
  if (c.plan.elastic && o.target == Target::JobSet) {
    c.Report(DiagId::ElasticFixedOnJobSet, j.elastic->range, j.name, o.nodes)
        .Help(
            "use `target = kubeflow` (a PyTorchJob with an elasticPolicy) or `target = slurm` to go on with fewer "
            "nodes when one is lost");
  } else if (c.plan.elastic) {
    for (const plan::ElasticLayout& e : c.plan.elastic->layouts)
      o.elastic_nodes.insert(o.elastic_nodes.begin(), e.nodes);
    // A PyTorchJob of an elastic job has a pod per node slot, the most nodes.
    if (o.target == Target::Kubeflow) o.backoff_limit = o.max_restarts * o.elastic_nodes.front() + 1;
  }
  if (o.nodes > 1 && j.workload.gpus % o.procs_per_node != 0) {
    int64_t per = o.procs_per_node, lower = j.workload.gpus / per * per;
    c.diags.Report(DiagId::PartialNode, j.at.gpus, j.name, o.nodes, j.workload.gpus, j.node_name, per)
        .Note(j.at.node_gpus, fmt::format("node `{}` has {} GPUs", j.node_name, per))
        .Help(fmt::format("use `gpus = {}` or `gpus = {}`", lower, lower + per));
  }
  // Images go into the Argo workflow, where `{{` is a template expression.
  for (const check::Written* w : {&j.deploy.image, &j.deploy.tools_image}) {
    if (!w->value.empty()) CheckScriptSafe(c, w->value, "container image", w->range);
    if (!IsImageDigestValid(w->value)) {
      ReportInvalid(c, *w, "container image", "a digest is written `@sha256:` and 64 lower-case hex digits");
    }
  }
  if (o.target != Target::Slurm && o.image.empty()) {
    c.Report(DiagId::MissingImage, j.name_range, j.name)
        .Help("add `image = \"registry.example/aviflow/train:1.0\"` to the job");
  }
  if (o.target != Target::Slurm && o.scheduler == Scheduler::Kueue && o.queue.empty()) {
    c.Report(DiagId::NoQueueForKueue, j.name_range, j.name)
        .Help(
            "add `queue = \"LOCAL_QUEUE\"` (a Kueue LocalQueue of the namespace), or give the cluster "
            "`scheduler = volcano` or `scheduler = default`");
  }
  CheckNames(c);
}

// `name=count` extended resources of the cluster.
void LowerExtendedResources(LowerContext& c) {
  for (const check::Written& w : c.job.deploy.node_resources) {
    KeyValue kv = SplitKeyValue(w.value);
    std::string why = ResourceNameProblem(kv.key);
    int64_t count = 0;
    bool number = kv.has_value && !kv.value.empty() && kv.value.size() < 10 &&
                  std::all_of(kv.value.begin(), kv.value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (number) count = std::stoll(kv.value);
    if (why.empty() && (!number || count < 1))
      why = "write `name=count` with a whole count of at least 1, e.g. `rdma/ib=1`";
    if (why.empty() && kv.key == "nvidia.com/gpu") why = "GPUs are requested from the plan; leave `nvidia.com/gpu` out";
    for (const auto& [name, n] : c.out.resources.extended) {
      if (why.empty() && name == kv.key) why = fmt::format("`{}` is already requested as `{}={}`", name, name, n);
    }
    if (!why.empty()) {
      ReportInvalid(c, w, "extended resource", why);
      continue;
    }
    c.out.resources.extended.emplace_back(kv.key, count);
  }
}

// A request the job leaves to the node's figures, where those figures are
// the stdlib's reference machine: the user's machines may have fewer CPUs
// or less memory (pods that never schedule) or more (left idle). The job
// declares its own CPUs with `resources.cpus`, or with a node whose `cpus`
// is written in the user's files (their node, an override, an inline
// instance); memory the same with `resources.memory` and `cpu_memory`.
void ReportReferenceResources(LowerContext& c) {
  const check::DeploySpec& d = c.job.deploy;
  const Resources& r = c.out.resources;
  bool cpus = !d.cpus && d.node_cpus_in_stdlib && r.cpus;
  bool memory = !d.memory && d.node_memory_in_stdlib && !r.memory.empty();
  if (!c.writes_pods || (!cpus && !memory)) return;
  std::string cpu_text = cpus ? fmt::format("{} CPUs", *r.cpus) : "";
  std::string memory_text =
      memory ? fmt::format("{} ({}) of memory", r.memory, check::BytesText(*d.node_memory * kNodeShare)) : "";
  std::string requests = cpus && memory ? cpu_text + " and " + memory_text : cpu_text + memory_text;
  auto b = c.Report(DiagId::ReferenceNodeResources, d.reference_node_use, c.job.name, requests, d.reference_node);
  if (cpus) {
    b.Note(d.node_cpus_range, fmt::format("the stdlib's `{}` declares {} CPUs", d.reference_node, *d.node_cpus));
  }
  if (memory) {
    b.Note(d.node_memory_range, fmt::format("the stdlib's `{}` declares `cpu_memory = {}`", d.reference_node,
                                            check::BytesText(*d.node_memory)));
  }
  std::string job_fields = cpus && memory ? "cpus = N; memory = SIZE" : cpus ? "cpus = N" : "memory = SIZE";
  std::string node_fields = cpus && memory ? "cpus = N; cpu_memory = SIZE" : cpus ? "cpus = N" : "cpu_memory = SIZE";
  bool own_node = c.job.node_name != d.reference_node;
  b.Help(own_node ? fmt::format("add your machines' `{}` to node `{}`, or give job `{}` `resources {{ {} }}`",
                                node_fields, c.job.node_name, c.job.name, job_fields)
                  : fmt::format("describe your machines in a node of your own, `node NAME : {} {{ {} }}`, or give job "
                                "`{}` `resources {{ {} }}`",
                                d.reference_node, node_fields, c.job.name, job_fields));
}

// The request, else a share of what the node has, else nothing; never more
// than the node has.
void LowerResources(LowerContext& c) {
  const check::DeploySpec& d = c.job.deploy;
  Resources& r = c.out.resources;
  r.gpus = c.job.deploy.on_cpu ? 0 : c.out.procs_per_node;
  r.cpus = d.cpus;
  if (!r.cpus && d.node_cpus) r.cpus = std::max<int64_t>(1, static_cast<int64_t>(*d.node_cpus * kNodeShare));
  if (d.cpus && d.node_cpus && *d.cpus > *d.node_cpus) {
    c.Report(DiagId::ExceedsNode, d.cpus_range, c.job.name, fmt::format("{} CPUs", *d.cpus), c.job.node_name,
             fmt::format("{} CPUs", *d.node_cpus))
        .Note(d.node_cpus_range, fmt::format("node `{}` declares {} CPUs", c.job.node_name, *d.node_cpus));
  }
  std::optional<double> memory = d.memory;
  if (!memory && d.node_memory) memory = *d.node_memory * kNodeShare;
  if (d.memory && d.node_memory && *d.memory > *d.node_memory) {
    auto b = c.Report(DiagId::ExceedsNode, d.memory_range, c.job.name, check::BytesText(*d.memory) + " of memory",
                      c.job.node_name, check::BytesText(*d.node_memory));
    b.Note(d.node_memory_range,
           fmt::format("node `{}` declares `cpu_memory = {}`", c.job.node_name, check::BytesText(*d.node_memory)));
    std::string hint = check::BytePrefixHint(d.node_memory_range, *d.node_memory, d.memory_range, *d.memory);
    if (!hint.empty()) b.Help(hint);
  }
  double shm = d.shm ? *d.shm : memory ? std::floor(*memory / 4 / kGiB) * kGiB : 64 * kGiB;
  if (memory && shm > *memory) {
    c.Report(DiagId::ShmExceedsMemory, d.shm_range, check::BytesText(shm), check::BytesText(*memory))
        .Help(d.memory ? "/dev/shm is memory of the pod: make `resources.shm` smaller than `resources.memory`"
                       : "without `resources.memory` a pod gets 90% of the node's `cpu_memory`; make `resources.shm` "
                         "smaller than that");
  }
  if (memory) {
    r.memory = Quantity(*memory);
    r.memory_mib = static_cast<int64_t>(*memory / (1024.0 * 1024.0));
  }
  r.shm = Quantity(std::max(shm, 1024.0 * 1024.0));
  LowerExtendedResources(c);
  ReportReferenceResources(c);
}

void AddEnv(Deployment& o, std::string name, std::string value, std::string note = "") {
  o.env.push_back(deploy::EnvVar::Literal(std::move(name), std::move(value), std::move(note)));
}

// NCCL's transport follows the fabric: IB verbs on InfiniBand, and on
// Ethernet when adapters are named (RoCE); otherwise TCP sockets.
void LowerNetwork(LowerContext& c) {
  const check::DeploySpec& d = c.job.deploy;
  Deployment& o = c.out;
  if (d.on_cpu) {
    // Also what the preflight reads: no adapter port to check.
    AddEnv(o, "NCCL_IB_DISABLE", "1", "`device = cpu`: the ranks talk over TCP sockets, not NCCL");
    return;
  }
  bool rdma = d.network_kind == check::FabricKind::Infiniband ||
              (d.network_kind == check::FabricKind::Ethernet && !d.hcas.empty());
  AddEnv(o, "NCCL_IB_DISABLE", rdma ? "0" : "1",
         fmt::format("fabric `{}` is {}: {}", c.job.network_name, d.network_kind ? Name(*d.network_kind) : "",
                     rdma ? "RDMA verbs" : "no adapters named in `hcas`, TCP sockets"));
  if (!d.hcas.empty()) {
    std::string list;
    for (const check::Written& h : d.hcas) list += (list.empty() ? "" : ",") + h.value;
    AddEnv(o, "NCCL_IB_HCA", "=" + list, "exactly the cluster's `hcas`");
  }
  if (!d.socket_interface.value.empty()) {
    AddEnv(o, "NCCL_SOCKET_IFNAME", "=" + d.socket_interface.value,
           "the cluster's `socket_interface`: bootstrap traffic");
  }
  AddEnv(o, "NCCL_DEBUG", "WARN");
  o.security.ipc_lock = rdma && o.nodes > 1;
  for (const check::Written& h : d.hcas) CheckScriptSafe(c, h.value, "adapter name", h.range);
  if (!d.socket_interface.value.empty()) {
    CheckScriptSafe(c, d.socket_interface.value, "network interface", d.socket_interface.range);
  }
}

void LowerSelectors(LowerContext& c) {
  for (const check::Written& w : c.job.deploy.labels) {
    KeyValue kv = SplitKeyValue(w.value);
    std::string why = !kv.has_value ? "a node selector label is written `key=value`" : LabelKeyProblem(kv.key);
    if (why.empty()) why = LabelValueProblem(kv.value);
    for (const auto& [key, value] : c.out.node_selector) {
      if (why.empty() && key == kv.key)
        why = fmt::format("the key `{}` is already selected as `{}={}`", key, key, value);
    }
    if (!why.empty()) ReportInvalid(c, w, "node label", why);
    else c.out.node_selector.emplace_back(kv.key, kv.value);
  }
  for (const check::Written& w : c.job.deploy.node_taints) {
    std::string why;
    Taint t = ParseTaint(w.value, why);
    if (!why.empty()) ReportInvalid(c, w, "node taint", why);
    else c.out.tolerations.push_back({t.key, t.value, t.effect});
  }
}

// The planner fills nodes leaf by leaf; the pods must land the same way.
void LowerPlacement(LowerContext& c) {
  const check::DeploySpec& d = c.job.deploy;
  Placement& p = c.out.placement;
  p.leaf_label = d.leaf_label.value;
  p.spine_label = d.spine_label.value;
  p.leaves_used = c.plan.leaves_used;
  for (const check::Written* w : {&d.leaf_label, &d.spine_label}) {
    if (w->value.empty()) continue;
    if (std::string why = LabelKeyProblem(w->value); !why.empty()) ReportInvalid(c, *w, "node label key", why);
  }
  int64_t nodes = c.out.nodes, per_leaf = c.job.hardware.nodes_per_leaf;
  // The planner priced one leaf (and the preflight expects its bandwidth);
  // Slurm keeps the job there with --switches=1, Kubernetes only by label.
  const cost::Hardware& hw = c.job.hardware;
  if (p.leaf_label.empty() && nodes > 1 && c.out.target != Target::Slurm && c.plan.leaves_used == 1 && per_leaf > 0 &&
      hw.nodes > per_leaf && hw.oversubscription > 1) {
    c.Report(DiagId::OneLeafNotPinned, c.job.at.topology.isValid() ? c.job.at.topology : c.job.name_range, c.job.name,
             nodes, c.job.cluster_name, fmt::format("{:g}", hw.oversubscription))
        .Help(
            "add `leaf_label = \"LABEL\"` to the cluster's `topology`: the node label whose value names each node's "
            "leaf switch, so that the pods land on one leaf as planned");
  }
  if (p.leaf_label.empty() || nodes <= 1) p.mode = TopologyMode::None;
  else if (per_leaf > 0 && nodes <= per_leaf) p.mode = TopologyMode::OneLeaf;
  else if (c.out.scheduler == Scheduler::Kueue && c.out.target == Target::JobSet && per_leaf > 0 &&
           nodes % per_leaf == 0) {
    p.mode = TopologyMode::Slices;
    p.slice_nodes = per_leaf;
    int64_t per_spine = c.job.hardware.leaves_per_spine;
    p.one_spine = !p.spine_label.empty() && (per_spine == 0 || c.plan.leaves_used <= per_spine);
  } else {
    p.mode = TopologyMode::Preferred;
  }
}

// Kubernetes: the training pods mount the Secret NAME-rendezvous read-only
// and avf-run reads the token from the file; a non-root trainer needs the
// pod's fsGroup to read a file of mode 0400. Slurm: the batch script makes
// the token and exports it (emit/slurm.cpp).
void LowerToken(LowerContext& c) {
  Deployment& o = c.out;
  JobToken& t = o.token;
  if (o.target == Target::Slurm) {
    t.env = plan_format::kEnvJobToken;
    return;
  }
  t.secret = o.name + kTokenSecretSuffix;
  t.key = "token";
  t.mount_dir = "/var/run/secrets/aviflow";
  t.env = plan_format::kEnvJobTokenFile;
  constexpr int kMode = 0400;
  std::string why = fmt::format("{:04o} in octal: only the owner (root) reads the token, and the pod's fsGroup", kMode);
  o.volumes.push_back({.kind = VolumeKind::Secret,
                       .name = "job-token",
                       .source = t.secret,
                       .mount_path = t.mount_dir,
                       .read_only = true,
                       .file_mode = kMode,
                       .note = why});
  AddEnv(o, t.env, t.file(),
         fmt::format("the token every rank presents to the rendezvous store: Secret `{}`, key `{}`", t.secret, t.key));
  if (!o.security.ipc_lock) o.security.fs_group = o.security.group;
}

// What an all-reduce of the job's ranks should reach, in GB/s of bus
// bandwidth: each GPU's share of its node's NICs across nodes (less behind
// an oversubscribed spine), NVLink within one node; 0 when not declared.
auto ExpectedBusBandwidth(const LowerContext& c) -> double {
  const cost::Hardware& h = c.job.hardware;
  if (c.out.nodes <= 1) return h.nvlink_bandwidth / 1e9;
  double per_gpu = h.nic_bandwidth * static_cast<double>(h.nics_per_node) / static_cast<double>(h.gpus_per_node);
  if (c.plan.leaves_used > 1) per_gpu /= h.oversubscription;
  return per_gpu / 1e9;
}

// avf-run checks the nodes before it trains, at every start of the pods:
// half the expected bandwidth or less names a bad link. On CPUs it checks
// that every rank starts and the all-reduce over TCP completes; the fabric's
// bandwidth is not what TCP between CPU ranks reaches.
void LowerPreflight(LowerContext& c) {
  Deployment& o = c.out;
  o.command.push_back("--preflight");
  if (c.job.deploy.on_cpu) {
    o.command.insert(o.command.end(), {"--preflight-device", "cpu"});
    return;
  }
  double floor_gbps = std::floor(ExpectedBusBandwidth(c) * kPreflightShare * 10) / 10;
  if (floor_gbps > 0) o.command.insert(o.command.end(), {"--min-bus-gbps", fmt::format("{:.1f}", floor_gbps)});
}

// MOUNT/PATH of a location on a tier the pods mount; "" when none does.
auto PathInPods(const Deployment& o, const check::Location& loc) -> std::string {
  for (const Volume& v : o.volumes) {
    if (v.storage == loc.storage) return v.mount_path + (loc.path.empty() ? "" : "/" + loc.path);
  }
  return "";
}

// What avf-run reads besides the plan: the shards (the staged copy, else the
// source), held-out shards, pretrained weights.
void AddInputs(LowerContext& c) {
  Deployment& o = c.out;
  const check::JobSpec& j = c.job;
  std::string data = o.staging ? o.staging->dest_dir : PathInPods(o, j.dataset.source);
  o.trainer_paths.data_dir = data;
  if (!data.empty()) o.command.insert(o.command.end(), {"--data-dir", data});
  if (j.validation) {
    // The training dataset as held-out data (W0729) is read where training reads it.
    bool same = j.validation->dataset.name == j.dataset.name;
    std::string dir = same ? data : PathInPods(o, j.validation->dataset.source);
    if (!dir.empty()) o.command.insert(o.command.end(), {"--validation-dir", dir});
  }
  if (j.init) {
    std::string dir = PathInPods(o, *j.init);
    o.trainer_paths.init_dir = dir;
    if (!dir.empty()) o.command.insert(o.command.end(), {"--init", dir});
  }
}

void LowerCommand(LowerContext& c) {
  Deployment& o = c.out;
  std::string plan = o.target == Target::Slurm ? "${AVF_PLAN}" : "/etc/aviflow/plan.json";
  // A trainer pod without its GPUs fails at once rather than train on the
  // CPU, unless the job asks for the CPU.
  o.command = {"avf-run", "--plan", plan, "--device", c.job.deploy.on_cpu ? "cpu" : "gpu"};
  AddInputs(c);
  const check::CheckpointSpec& ck = c.job.checkpoint;
  std::string dir = ck.enabled && ck.dir ? PathInPods(o, *ck.dir) : "";
  if (!dir.empty()) {
    o.command.insert(o.command.end(), {"--checkpoint-dir", dir});
    // Only the key file's path: the key itself is never on a command line.
    if (o.checkpoint_key) o.command.insert(o.command.end(), {"--checkpoint-key-file", o.checkpoint_key->file});
    o.command.insert(o.command.end(), {"--resume", "latest"});
    o.run_dir = dir + "/" + std::string(kRunFolder);
  }
  // metrics.jsonl and the memory reports outlive the pods: beside the
  // checkpoints (and exported with them), else on the hot tier.
  if (o.run_dir.empty() && o.staging) {
    for (const Volume& v : o.volumes) {
      if (v.storage == o.staging->hot_storage) o.run_dir = v.mount_path + "/runs/" + o.name;
    }
  }
  if (!o.run_dir.empty()) o.command.insert(o.command.end(), {"--run-dir", o.run_dir});
  o.trainer_paths.checkpoint_dir = dir;
  o.trainer_paths.output_dir = o.run_dir;
  // The preflight is avf-run's: another trainer starts training at once.
  if (c.job.deploy.preflight && c.job.trainer.kind == check::TrainerKind::Avf) LowerPreflight(c);
  LowerTrainerCommand(c);
}

}  // namespace

auto Quantity(double bytes) -> std::string {
  auto mib = static_cast<int64_t>(bytes / (1024.0 * 1024.0));
  if (mib > 0 && mib % 1024 == 0) return fmt::format("{}Gi", mib / 1024);
  return fmt::format("{}Mi", std::max<int64_t>(mib, 1));
}

auto Printable(const std::string& text) -> std::string {
  std::string out;
  for (char ch : text) {
    auto u = static_cast<unsigned char>(ch);
    if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\r') out += "\\r";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\u{{{:x}}}", u);
    else out += ch;
  }
  return out;
}

auto CheckScriptSafe(LowerContext& c, const std::string& text, const std::string& what, llvm::SMRange at) -> bool {
  std::string why;
  if (text.find("{{") != std::string::npos) why = "`{{` starts an Argo template expression";
  for (char ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) why = "it holds a control character";
  }
  if (why.empty()) return true;
  c.Report(DiagId::InvalidKubernetesValue, at, Printable(text), what, why);
  return false;
}

auto LocalTierOf(const check::JobSpec& job) -> std::optional<check::Location> {
  std::vector<const check::Location*> tiers{&job.dataset.source};
  if (job.dataset.stage_to) tiers.push_back(&*job.dataset.stage_to);
  if (job.validation) tiers.push_back(&job.validation->dataset.source);
  if (job.init) tiers.push_back(&*job.init);
  if (job.checkpoint.enabled && job.checkpoint.dir) tiers.push_back(&*job.checkpoint.dir);
  if (job.checkpoint.enabled && job.checkpoint.export_to) tiers.push_back(&*job.checkpoint.export_to);
  for (const check::Location* t : tiers) {
    if (t->storage_kind == check::StorageKind::Local) return *t;
  }
  return std::nullopt;
}

auto Lower(const plan::Plan& plan, const LowerOptions& options, diag::DiagnosticEngine& diags)
    -> std::optional<Deployment> {
  Deployment out;
  out.source_name = options.source_name;
  out.plan_json = options.plan_json;
  out.plan_sha256 = options.plan_sha256;
  size_t errors = diags.error_count();
  LowerContext c{plan, plan.job, diags, out, options.writes_pods};
  LowerIdentity(c, options.target);
  if (out.name.empty()) return std::nullopt;
  if (auto local = LocalTierOf(plan.job)) {
    diags
        .Report(DiagId::LocalStorageOnCluster, local->decl_range, plan.job.name, local->storage,
                out.target == Target::Slurm ? "the nodes of a Slurm cluster" : "a cluster's pods")
        .Help("use a shared tier (beegfs, lustre, nfs, pvc) or an object store, or run the job here");
    return std::nullopt;
  }
  if (out.target != Target::Slurm && out.plan_json.size() > kMaxConfigMapPlanBytes) {
    diags.Report(DiagId::PlanTooLarge, plan.job.name_range, plan.job.name, out.plan_json.size(), kMaxConfigMapPlanBytes)
        .Help("the plan grows with the pipeline stages and their chunks; use `target = slurm`, or fewer chunks");
  }
  if (plan.job.deploy.on_cpu && plan.job.trainer.kind != check::TrainerKind::Avf) {
    diags.Report(DiagId::CpuNeedsAvfRun, plan.job.deploy.device_range, plan.job.name, Name(plan.job.trainer.kind))
        .Note(plan.job.trainer.kind_range, fmt::format("the job runs {} here", Name(plan.job.trainer.kind)))
        .Help("remove `device = cpu`, or train with avf-run (remove `trainer`)");
    return std::nullopt;
  }
  LowerResources(c);
  LowerNetwork(c);
  LowerSelectors(c);
  LowerPlacement(c);
  LowerStorage(c);
  LowerToken(c);
  LowerCommand(c);
  LowerMonitoring(c);
  LowerSiteNeeds(c);
  if (diags.error_count() > errors || c.repeated_error) return std::nullopt;
  return out;
}

}  // namespace avf::deploy
