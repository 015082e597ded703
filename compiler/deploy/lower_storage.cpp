// Storage of a deployment: which tiers the pods mount and how, the stage-in
// of the dataset (copier ranges bounded by the tiers' bandwidth; the shards'
// sizes come from their headers, read by the staging steps) and the export
// of the kept checkpoints.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "check/check.h"
#include "deploy/k8s_names.h"
#include "deploy/lower_context.h"
#include "plan/overheads.h"

namespace avf::deploy {

namespace {

using check::Location;
using diag::DiagId;

using plan::kShardHeaderBytes;

auto Trimmed(std::string path) -> std::string {
  while (!path.empty() && path.back() == '/') path.pop_back();
  size_t start = 0;
  while (start < path.size() && path[start] == '/') ++start;
  return path.substr(start);
}

auto Join(const std::string& root, const std::string& path) -> std::string {
  std::string rel = Trimmed(path);
  if (rel.empty()) return root;
  return root == "/" ? "/" + rel : root + "/" + rel;
}

// The kernel's names of a shared tier's file system, as /proc/self/mountinfo
// spells them.
auto KernelFsTypes(check::StorageKind kind) -> std::vector<std::string> {
  switch (kind) {
    case check::StorageKind::Lustre: return {"lustre"};
    case check::StorageKind::Beegfs: return {"beegfs"};
    case check::StorageKind::Nfs: return {"nfs", "nfs4"};
    default: return {};
  }
}

// The volume of a file-system tier, added once (a copy: the list grows);
// nullopt after a diagnostic.
auto TierVolume(LowerContext& c, const Location& loc) -> std::optional<Volume> {
  for (const Volume& v : c.out.volumes) {
    if (v.storage == loc.storage) return v;
  }
  if (!loc.ca_bundle.empty()) {
    c.Report(DiagId::InvalidKubernetesValue, loc.decl_range, Printable(loc.ca_bundle), "CA bundle",
             "a `ca_bundle` is the CA of an https object store");
    return std::nullopt;
  }
  Volume v;
  v.storage = loc.storage;
  v.name = "tier-" + Dns1035Label(loc.storage, 50).value_or("storage");
  std::string claim = loc.claim;
  if (!claim.empty()) {
    if (!IsDns1123Subdomain(claim)) {
      c.Report(DiagId::InvalidKubernetesValue, loc.decl_range, Printable(claim), "PersistentVolumeClaim name",
               "lower-case letters, digits, `-` and `.`");
      return std::nullopt;
    }
    if (c.out.target == Target::Slurm) {
      c.Report(DiagId::ClaimOnSlurm, loc.decl_range, loc.storage)
          .Help(loc.storage_kind == check::StorageKind::Pvc
                    ? "declare the file system behind the claim (`kind = nfs`, `beegfs` or `lustre`) with the `mount` "
                      "where the Slurm nodes mount it"
                    : "give the tier the `mount` where the Slurm nodes mount it, without `claim`");
      return std::nullopt;
    }
    v.kind = VolumeKind::Claim;
    v.source = claim;
    v.mount_path = loc.mount.empty() ? "/mnt/" + v.name.substr(5) : loc.mount;
  } else {
    v.kind = VolumeKind::HostPath;
    v.source = loc.mount;
    v.mount_path = loc.mount;
    v.fs_types = KernelFsTypes(loc.storage_kind);
  }
  if (v.mount_path.empty() || v.mount_path.front() != '/') {
    c.Report(DiagId::InvalidKubernetesValue, loc.decl_range, Printable(v.mount_path), "mount path",
             "a cluster tier is mounted at an absolute path");
    return std::nullopt;
  }
  if (!CheckScriptSafe(c, v.mount_path, "mount path", loc.decl_range)) return std::nullopt;
  if (loc.storage_kind == check::StorageKind::Pvc && loc.capacity) {
    if (!loc.storage_class.empty() && !IsDns1123Subdomain(loc.storage_class)) {
      c.Report(DiagId::InvalidKubernetesValue, loc.decl_range, Printable(loc.storage_class), "StorageClass name",
               "lower-case letters, digits, `-` and `.`");
    }
    c.out.claims.push_back({claim, loc.storage_class, Quantity(*loc.capacity), loc.storage});
  }
  c.out.volumes.push_back(v);
  return v;
}

auto ProviderOf(check::StorageKind kind) -> std::string {
  if (kind == check::StorageKind::Ceph) return "Ceph";
  if (kind == check::StorageKind::Minio) return "Minio";
  return "AWS";
}

// An object store as an rclone remote, or a file-system tier by its path.
auto RemoteOf(LowerContext& c, const Location& loc, std::string name) -> std::optional<Remote> {
  Remote r;
  r.name = std::move(name);
  r.storage = loc.storage;
  if (!loc.ca_bundle.empty()) {
    std::string why = !IsObjectStore(loc.storage_kind)     ? "a `ca_bundle` is the CA of an https object store"
                      : !IsDns1123Subdomain(loc.ca_bundle) ? "a ConfigMap name: lower-case letters, digits, `-` and `.`"
                                                           : "";
    if (!why.empty()) {
      c.Report(DiagId::InvalidKubernetesValue, loc.decl_range, Printable(loc.ca_bundle), "CA bundle", why);
      return std::nullopt;
    }
    r.ca_configmap = loc.ca_bundle;
  }
  if (!IsObjectStore(loc.storage_kind)) {
    std::optional<Volume> v = TierVolume(c, loc);
    if (!v) return std::nullopt;
    r.local_root = v->mount_path;
    return r;
  }
  r.provider = ProviderOf(loc.storage_kind);
  r.endpoint = loc.endpoint;
  r.bucket = loc.bucket;
  r.secret = loc.credentials;
  bool safe = true;
  if (!r.secret.empty() && !IsDns1123Subdomain(r.secret)) {
    c.Report(DiagId::InvalidKubernetesValue, loc.decl_range, Printable(r.secret), "Secret name",
             "lower-case letters, digits, `-` and `.`");
    safe = false;
  }
  // Every problem of the tier is reported, not only the first.
  safe = CheckScriptSafe(c, r.endpoint, "endpoint", loc.decl_range) && safe;
  safe = CheckScriptSafe(c, r.bucket, "bucket", loc.decl_range) && safe;
  if (!safe) return std::nullopt;
  return r;
}

// rclone's --bwlimit (KiB/s) of each of `concurrent` copies that share the
// tiers' bandwidth; 0 when the bandwidth is unknown (no limit).
auto BwlimitKib(double total_bandwidth, int64_t concurrent) -> int64_t {
  if (total_bandwidth <= 0 || concurrent < 1) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(total_bandwidth / static_cast<double>(concurrent) / 1024));
}

// Contiguous shard ranges, the first `shards % n` one shard longer.
auto SplitShards(int64_t shards, int64_t n) -> std::vector<ShardRange> {
  std::vector<ShardRange> ranges;
  int64_t base = shards / n, extra = shards % n, first = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t count = base + (i < extra ? 1 : 0);
    ranges.push_back({first, first + count - 1});
    first += count;
  }
  return ranges;
}

void LowerStaging(LowerContext& c) {
  const check::DatasetSpec& ds = c.job.dataset;
  std::optional<Volume> hot = TierVolume(c, *ds.stage_to);
  std::optional<Remote> source = RemoteOf(c, ds.source, "avfsrc");
  bool path_ok = CheckScriptSafe(c, ds.source.path, "dataset path", c.job.at.dataset_source);
  if (!hot || !source || !path_ok) return;
  Staging s;
  s.source = *source;
  s.source_path = Trimmed(ds.source.path);
  s.dest_dir = Join(hot->mount_path, ds.name);
  s.hot_storage = hot->storage;
  s.shards = ds.shards;
  s.declared_tokens = ds.tokens;
  s.format = Name(ds.format);
  s.token_bytes = ds.token_bytes;
  s.header_bytes = kShardHeaderBytes;
  s.total_bandwidth = plan::StagingBandwidth(ds);
  s.ranges = SplitShards(ds.shards, plan::CopierCount(c.job, s.total_bandwidth));
  auto ranges = static_cast<int64_t>(s.ranges.size());
  // Slurm runs a copier task per node, on the fewest nodes the job may get.
  int64_t nodes = c.out.elastic_nodes.empty() ? c.out.nodes : c.out.elastic_nodes.back();
  s.concurrent_copies = c.out.target == Target::Slurm ? std::min(ranges, nodes) : ranges;
  s.bwlimit_kib = BwlimitKib(s.total_bandwidth, s.concurrent_copies);
  std::string_view kind = Name(ds.source.storage_kind);
  std::string where = IsObjectStore(ds.source.storage_kind)
                          ? fmt::format("{}:{}/{}", kind, source->endpoint, source->bucket)
                          : std::string(kind);
  s.marker = fmt::format("aviflow-staged v1 source={}/{} tokens={} shards={} format={} header={}", where, s.source_path,
                         ds.tokens, ds.shards, Name(ds.format), kShardHeaderBytes);
  s.cleanup = c.job.deploy.cleanup_staged;
  c.out.staging = std::move(s);
}

void LowerExport(LowerContext& c, const Volume& ckpt_tier) {
  const check::CheckpointSpec& ck = c.job.checkpoint;
  std::optional<Remote> dest = RemoteOf(c, *ck.export_to, "avfdst");
  bool path_ok = CheckScriptSafe(c, ck.export_to->path, "export path", c.job.at.checkpoint_dir);
  if (!dest || !path_ok) return;
  Export e;
  e.dest = *dest;
  e.dest_path = Trimmed(ck.export_to->path);
  e.checkpoint_dir = Join(ckpt_tier.mount_path, ck.dir->path);
  e.checkpoint_storage = ckpt_tier.storage;
  e.keep = ck.keep;
  e.trainer = c.job.trainer.kind;
  c.out.export_checkpoints = std::move(e);
}

// Kubernetes: the Secret's key `key` alone, read-only, 0400 (read through
// the pod's fsGroup, as the job token is); Slurm: a file under $AVF_SECRETS.
void LowerCheckpointKey(LowerContext& c) {
  const std::string& secret = c.job.checkpoint.encrypt_secret;
  if (!IsDns1123Subdomain(secret)) {
    c.Report(DiagId::InvalidKubernetesValue, c.job.at.encrypt, Printable(secret), "Secret name",
             "lower-case letters, digits, `-` and `.`");
    return;
  }
  CheckpointKey k;
  k.secret = secret;
  if (c.out.target == Target::Slurm) {
    k.file = "${AVF_SECRETS}/" + secret + "/" + k.key;
    c.out.checkpoint_key = std::move(k);
    return;
  }
  k.mount_dir = "/var/run/aviflow/checkpoint-key";
  k.file = k.mount_dir + "/" + k.key;
  constexpr int kMode = 0400;
  c.out.volumes.push_back(
      {.kind = VolumeKind::Secret,
       .name = "checkpoint-key",
       .source = secret,
       .mount_path = k.mount_dir,
       .read_only = true,
       .file_mode = kMode,
       .note = fmt::format("{:04o} in octal: only the owner (root) reads the key, and the pod's fsGroup", kMode),
       .item = k.key});
  c.out.checkpoint_key = std::move(k);
}

void LowerCheckpoints(LowerContext& c) {
  const check::CheckpointSpec& ck = c.job.checkpoint;
  if (!ck.enabled) return;
  if (!ck.dir) {
    c.Report(DiagId::CheckpointWithoutDir, c.job.at.checkpoint_dir, c.job.name)
        .Help("add `dir = HOT_TIER / \"ckpt/" + c.job.name + "\"` to the checkpoint record");
    return;
  }
  CheckScriptSafe(c, ck.dir->path, "checkpoint path", c.job.at.checkpoint_dir);
  std::optional<Volume> tier = TierVolume(c, *ck.dir);
  if (tier && ck.export_to) LowerExport(c, *tier);
}

// The pretrained weights and a held-out dataset other than the training one
// are read in place: their tiers are mounted (sema's checks keep them off
// object stores).
void LowerReadInPlace(LowerContext& c) {
  const check::JobSpec& j = c.job;
  if (j.init && IsFileSystem(j.init->storage_kind)) {
    CheckScriptSafe(c, j.init->path, "init path", j.at.init);
    TierVolume(c, *j.init);
  }
  if (!j.validation || j.validation->dataset.name == j.dataset.name) return;
  const Location& held_out = j.validation->dataset.source;
  if (!IsFileSystem(held_out.storage_kind)) return;
  CheckScriptSafe(c, held_out.path, "dataset path", j.at.validation_source);
  TierVolume(c, held_out);
}

}  // namespace

void LowerStorage(LowerContext& c) {
  Deployment& o = c.out;
  o.volumes.push_back({.kind = VolumeKind::ConfigMap,
                       .name = "plan",
                       .source = o.configmap,
                       .mount_path = "/etc/aviflow",
                       .read_only = true});
  o.volumes.push_back(
      {.kind = VolumeKind::Memory, .name = "dshm", .mount_path = "/dev/shm", .size_limit = o.resources.shm});
  const check::DatasetSpec& ds = c.job.dataset;
  if (ds.stage_to) {
    LowerStaging(c);
  } else if (IsObjectStore(ds.source.storage_kind)) {
    c.Report(DiagId::DatasetNotFiles, c.job.at.dataset_source, ds.name, Name(ds.source.storage_kind), ds.source.storage)
        .Note(c.job.at.dataset_decl, "dataset declared here")
        .Help("stage it to a file-system tier first: add `stage_to = HOT_TIER` to the dataset");
  } else {
    CheckScriptSafe(c, ds.source.path, "dataset path", c.job.at.dataset_source);
    TierVolume(c, ds.source);
  }
  LowerCheckpoints(c);
  LowerReadInPlace(c);
  const check::CheckpointSpec& ck = c.job.checkpoint;
  if (ck.enabled && ck.dir && !ck.encrypt_secret.empty()) LowerCheckpointKey(c);
}

}  // namespace avf::deploy
