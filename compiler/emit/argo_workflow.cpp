// workflow.yaml: the job's lifecycle as an Argo DAG.
//
//   check-staged -> check-source -> stage-in (N copiers) -> seal-staged -> start-training -> train -> export
//   make-token (the job token's Secret, unless it exists) ---^
//   onExit: report, stop-training (unless it succeeded), cleanup-staged (when asked)
//
// A mutex named after the job lets one of its workflows run at a time.
// Every step retries and is safe to run again: start-training creates the
// training object unless this workflow's exists, and train only watches it,
// so a retry after a lost step pod attaches to the same run. Restarts of the
// run itself are the training object's: it restarts its pods and avf-run
// resumes from the last checkpoint.
#include <optional>

#include <fmt/format.h>

#include "emit/k8s_pod.h"
#include "emit/kube_scripts.h"
#include "emit/manifests.h"
#include "emit/scripts.h"

namespace avf::emit {

namespace {

using deploy::Deployment;
using deploy::EnvVar;
using deploy::Volume;

constexpr std::string_view kStagedResult = "{{tasks.check-staged.outputs.result}}";

// When a step runs again after it failed or lost its pod.
enum class Retry : uint8_t {
  None,
  Always,           // 5 times, backoff from 30 s, within an hour
  UnlessBadShards,  // the same, unless the step found shards that are not whole (kBadShardsStatus)
  UnlessEnded,      // up to 20 times a minute apart, unless the training object ended the step
};

// A container of the step's pod that runs before its script, in another
// image, with the step's tiers (read-only) and scratch volumes mounted.
struct InitStep {
  std::string name;
  std::string image;
  std::string source;  // the shell script
  std::vector<deploy::EnvVar> env;
};

struct ToolStep {
  std::string name;
  std::string source;  // the shell script
  std::vector<deploy::EnvVar> env;
  std::vector<std::string> tiers;   // storage tiers it mounts
  std::vector<std::string> inputs;  // input parameters, passed as env
  Retry retry = Retry::None;
  const deploy::Remote* remote = nullptr;  // the object store it copies from or to
  std::vector<Volume> scratch{};           // the pod's own volumes, mounted by every container
  std::optional<InitStep> init{};
};

// A remote's CA, from its ConfigMap (docs/deploy.md, "Secrets").
auto CaVolume(const deploy::Remote& r) -> Volume {
  return {.kind = deploy::VolumeKind::ConfigMap,
          .name = "ca-" + r.name,
          .source = r.ca_configmap,
          .mount_path = CaCertDir(r),
          .read_only = true};
}

// The CA volumes of the workflow's remotes.
auto CaVolumes(const Deployment& d) -> std::vector<Volume> {
  std::vector<Volume> out;
  if (d.staging && !d.staging->source.ca_configmap.empty()) out.push_back(CaVolume(d.staging->source));
  if (d.export_checkpoints && !d.export_checkpoints->dest.ca_configmap.empty())
    out.push_back(CaVolume(d.export_checkpoints->dest));
  return out;
}

void WriteRetry(YamlWriter& y, Retry retry) {
  if (retry == Retry::None) return;
  y.MapField("retryStrategy", [&] {
    if (retry == Retry::Always || retry == Retry::UnlessBadShards) {
      y.Field("limit", "5");
      y.Field("retryPolicy", "Always");
      if (retry == Retry::UnlessBadShards)
        y.Field("expression", fmt::format("asInt(lastRetry.exitCode) != {}", kBadShardsStatus));
      y.MapField("backoff", [&] {
        y.Field("duration", "30s");
        y.Field("factor", "2");
        y.Field("maxDuration", "1h");
      });
      return;
    }
    // No maxDuration: it counts from the step's first start, weeks before a late retry.
    y.Field("limit", "20");
    y.Field("retryPolicy", "Always");
    y.Field("expression", fmt::format("asInt(lastRetry.exitCode) != {}", kTrainingEndedStatus));
    y.MapField("backoff", [&] { y.Field("duration", "1m"); });
  });
}

auto TierVolumes(const Deployment& d, const std::vector<std::string>& tiers) -> std::vector<Volume> {
  std::vector<Volume> out;
  for (const Volume& v : d.volumes) {
    for (const std::string& t : tiers) {
      if (!v.storage.empty() && v.storage == t) out.push_back(v);
    }
  }
  return out;
}

// Tool pods that mount a host path must run on the nodes that have it.
auto NeedsClusterNodes(const std::vector<Volume>& mounts) -> bool {
  for (const Volume& v : mounts) {
    if (v.kind == deploy::VolumeKind::HostPath) return true;
  }
  return false;
}

// Requests and limits of a tool container: a shell script and its copies.
void WriteToolResources(YamlWriter& y) {
  y.MapField("resources", [&] {
    y.MapField("requests", [&] {
      y.Field("cpu", "1");
      y.Field("memory", "1Gi");
    });
    y.MapField("limits", [&] { y.Field("memory", "2Gi"); });
  });
}

// The step's init container, which reads the step's tiers (mounted
// read-only) and writes to its scratch volumes.
void WriteInitStep(YamlWriter& y, const Deployment& d, const ToolStep& s) {
  std::vector<Volume> mounts = TierVolumes(d, s.tiers);
  for (Volume& v : mounts) v.read_only = true;
  mounts.insert(mounts.end(), s.scratch.begin(), s.scratch.end());
  y.SeqField("initContainers", [&] {
    y.Map([&] {
      y.Field("name", s.init->name);
      y.Field("image", s.init->image);
      y.Field("imagePullPolicy", "IfNotPresent");
      y.Key("command");
      y.StringSeq({"sh", "-c"});
      y.Key("args");
      y.Seq([&] { y.Text(s.init->source); });
      WriteEnv(y, s.init->env);
      WriteToolResources(y);
      WriteToolsSecurity(y, d);
      if (!mounts.empty()) WriteMounts(y, mounts);
    });
  });
}

void WriteToolStep(YamlWriter& y, const Deployment& d, const ToolStep& s) {
  std::vector<Volume> mounts = TierVolumes(d, s.tiers);
  bool ca = s.remote && !s.remote->ca_configmap.empty();
  if (ca) mounts.push_back(CaVolume(*s.remote));
  mounts.insert(mounts.end(), s.scratch.begin(), s.scratch.end());
  y.Map([&] {
    y.Field("name", s.name);
    if (!s.inputs.empty()) {
      y.MapField("inputs", [&] {
        y.SeqField("parameters", [&] {
          for (const std::string& p : s.inputs) y.Map([&] { y.Field("name", p); });
        });
      });
    }
    WriteRetry(y, s.retry);
    if (NeedsClusterNodes(mounts)) WriteSelectorAndTolerations(y, d);
    if (!s.scratch.empty()) WriteVolumes(y, s.scratch);
    if (s.init) WriteInitStep(y, d, s);
    y.MapField("script", [&] {
      y.Field("image", d.tools_image);
      y.Key("command");
      y.StringSeq({"sh"});
      std::vector<deploy::EnvVar> env;
      for (const std::string& p : s.inputs)
        env.push_back(EnvVar::Literal("ARG_" + p, "{{inputs.parameters." + p + "}}"));
      env.insert(env.end(), s.env.begin(), s.env.end());
      std::string tier_check = TierCheckScript(mounts);
      if (!tier_check.empty()) env.push_back(NodeNameEnv());
      if (ca) env.push_back(EnvVar::Literal("RCLONE_CA_CERT", CaCertDir(*s.remote) + "/ca.crt"));
      WriteEnv(y, env);
      WriteToolResources(y);
      WriteToolsSecurity(y, d);
      if (!mounts.empty()) WriteMounts(y, mounts);
      y.Key("source");
      y.Text(tier_check + s.source);
    });
  });
}

auto StagingSteps(const Deployment& d) -> std::vector<ToolStep> {
  const deploy::Staging& s = *d.staging;
  std::vector<std::string> tiers{s.hot_storage};
  std::vector<std::string> copy_tiers = tiers;
  if (s.source.is_local()) copy_tiers.push_back(s.source.storage);
  std::vector<std::string> source_tiers;
  if (s.source.is_local()) source_tiers.push_back(s.source.storage);
  std::string copy = "FIRST=\"$ARG_first\"\nLAST=\"$ARG_last\"\n" + CopyShardsScript(s, s.bwlimit_kib);
  return {
      {"check-staged", CheckStagedScript(s), {}, tiers, {}, Retry::None},
      {"check-source", CheckSourceScript(s), RemoteEnv(s.source), source_tiers, {}, Retry::UnlessBadShards, &s.source},
      {"copy-shards", copy, RemoteEnv(s.source), copy_tiers, {"first", "last"}, Retry::Always, &s.source},
      {"seal-staged", SealStagedScript(s), {}, tiers, {}, Retry::None},
  };
}

// The export's list of verified checkpoints, from its init container to its script.
const Volume kExportListVolume{
    .kind = deploy::VolumeKind::Memory, .name = "export-list", .mount_path = "/aviflow-export", .size_limit = "1Mi"};

// Copies the kept checkpoints that verify: the init container runs
// `avf-run checkpoint verify` in the job's image, which the tools image
// need not hold, and lists those that pass for the copy.
auto ExportStep(const Deployment& d) -> ToolStep {
  const deploy::Export& e = *d.export_checkpoints;
  std::vector<std::string> tiers{e.checkpoint_storage};
  if (e.dest.is_local() && e.dest.storage != e.checkpoint_storage) tiers.push_back(e.dest.storage);
  EnvVar list = EnvVar::Literal(std::string(kExportListEnv), kExportListVolume.mount_path + "/checkpoints");
  std::vector<EnvVar> env = RemoteEnv(e.dest);
  env.push_back(list);
  return {"export-checkpoints",
          ExportScript(e),
          env,
          tiers,
          {},
          Retry::Always,
          &e.dest,
          {kExportListVolume},
          InitStep{"verify-checkpoints", d.image, ListCheckpointsScript(e), {list}}};
}

void WriteTask(YamlWriter& y, std::string_view name, std::string_view depends, std::string_view when = "") {
  y.Field("name", name);
  y.Field("template", name);
  if (!depends.empty()) y.Field("depends", depends);
  if (!when.empty()) y.Field("when", when);
}

void WriteStageTasks(YamlWriter& y, const Deployment& d) {
  std::string missing = fmt::format("{} == missing", kStagedResult);
  y.Map([&] { WriteTask(y, "check-staged", ""); });
  // No copier starts before every source shard's header is checked.
  y.Map([&] { WriteTask(y, "check-source", "check-staged.Succeeded", missing); });
  y.Map([&] {
    y.Field("name", "stage-in");
    y.Field("template", "copy-shards");
    y.Field("depends", "check-source.Succeeded || check-source.Skipped");
    y.Field("when", missing);
    y.MapField("arguments", [&] {
      y.SeqField("parameters", [&] {
        y.Map([&] {
          y.Field("name", "first");
          y.Field("value", "{{item.first}}");
        });
        y.Map([&] {
          y.Field("name", "last");
          y.Field("value", "{{item.last}}");
        });
      });
    });
    y.SeqField("withItems", [&] {
      for (const deploy::ShardRange& r : d.staging->ranges) {
        y.Map([&] {
          y.Field("first", std::to_string(r.first));
          y.Field("last", std::to_string(r.last));
        });
      }
    });
  });
  y.Map([&] { WriteTask(y, "seal-staged", "stage-in.Succeeded || stage-in.Skipped", missing); });
}

void WriteDag(YamlWriter& y, const Deployment& d) {
  y.Map([&] {
    y.Field("name", "pipeline");
    y.MapField("dag", [&] {
      y.SeqField("tasks", [&] {
        // The token runs beside the stage-in; train waits for both.
        y.Map([&] { WriteTask(y, "make-token", ""); });
        std::string train_after;
        if (d.staging) {
          WriteStageTasks(y, d);
          train_after = "(seal-staged.Succeeded || seal-staged.Skipped) && ";
        }
        if (HasPodGroup(d)) {
          y.Map([&] { WriteTask(y, "create-podgroup", ""); });
          train_after += "create-podgroup.Succeeded && ";
        }
        y.Map([&] { WriteTask(y, "start-training", train_after + "make-token.Succeeded"); });
        y.Map([&] { WriteTask(y, "train", "start-training.Succeeded"); });
        if (d.export_checkpoints) y.Map([&] { WriteTask(y, "export-checkpoints", "train.Succeeded"); });
      });
    });
  });
}

const ObjectKind kPodGroup{"scheduling.volcano.sh", "podgroups"};

// kubectl's name of the job's object of kind `k`: `plural.group`, the job's name.
auto JobObject(const Deployment& d, const ObjectKind& k) -> KubeObject {
  return {k.plural + "." + k.group, d.name, d.k8s_namespace};
}

const EnvVar kWorkflowUid = EnvVar::Literal("WF_UID", "{{workflow.uid}}");

// Creates the object of `manifest` (owned by the workflow) unless this
// workflow's exists: a retry never makes a second one.
auto CreateOwnedStep(const Deployment& d, std::string name, const ObjectKind& k, const std::string& manifest)
    -> ToolStep {
  return {std::move(name), CreateOwnedScript(JobObject(d, k), manifest), {kWorkflowUid}, {}, {}, Retry::UnlessEnded};
}

// Succeeds and fails on the training object's own terminal conditions, which
// a restart, an eviction or a lost node never sets.
auto TrainStep(const Deployment& d) -> ToolStep {
  ObjectKind k = TrainingObjectKind(d);
  std::string done = d.target == deploy::Target::JobSet ? "Completed" : "Succeeded";
  return {"train", AwaitTrainingScript(JobObject(d, k), done), {kWorkflowUid}, {}, {}, Retry::UnlessEnded};
}

auto DeleteIfOwnedStep(const Deployment& d, std::string name, const ObjectKind& k) -> ToolStep {
  return {std::move(name), DeleteIfOwnedScript(JobObject(d, k)), {kWorkflowUid}, {}, {}, Retry::Always};
}

void WriteExitHandler(YamlWriter& y, const Deployment& d) {
  y.Map([&] {
    y.Field("name", "exit-handler");
    y.SeqField("steps", [&] {
      y.Seq([&] {
        y.Map([&] { WriteTask(y, "report", ""); });
        y.Map([&] { WriteTask(y, "stop-training", "", "{{workflow.status}} != Succeeded"); });
        if (HasPodGroup(d)) y.Map([&] { WriteTask(y, "delete-podgroup", ""); });
      });
      if (!d.staging) return;
      y.Seq([&] {
        y.Map([&] { WriteTask(y, "cleanup-staged", "", "{{workflow.parameters.cleanup-staged}} == true"); });
      });
    });
  });
  std::string report =
      "echo \"workflow $WF_NAME: $WF_STATUS\"\n"
      "if [ \"$WF_STATUS\" != Succeeded ]; then echo \"failures: $WF_FAILURES\"; fi\n";
  WriteToolStep(y, d,
                {"report",
                 report,
                 {EnvVar::Literal("WF_NAME", "{{workflow.name}}"), EnvVar::Literal("WF_STATUS", "{{workflow.status}}"),
                  EnvVar::Literal("WF_FAILURES", "{{workflow.failures}}")},
                 {},
                 {},
                 Retry::None});
  // A failed or stopped workflow must not leave the training pods running
  // (argo-workflows#8364), and the gang's PodGroup has done its work once the
  // run is over; each is deleted only when this workflow made it.
  WriteToolStep(y, d, DeleteIfOwnedStep(d, "stop-training", TrainingObjectKind(d)));
  if (HasPodGroup(d)) WriteToolStep(y, d, DeleteIfOwnedStep(d, "delete-podgroup", kPodGroup));
  if (d.staging) {
    // Not while another workflow's run of the job reads the staged copy.
    std::string cleanup = UnlessAnotherRunsScript(JobObject(d, TrainingObjectKind(d)), CleanupScript(*d.staging));
    WriteToolStep(y, d, {"cleanup-staged", cleanup, {kWorkflowUid}, {d.staging->hot_storage}, {}, Retry::None});
  }
}

// Creates the job token's Secret unless it exists; idempotent, so it retries.
auto MakeTokenStep(const Deployment& d) -> ToolStep {
  return {"make-token",
          MakeTokenScript(d.token, d.k8s_namespace, JobLabels(d)),
          {EnvVar::Literal("WF_NAME", "{{workflow.name}}"), kWorkflowUid},
          {},
          {},
          Retry::Always};
}

void WriteTemplates(YamlWriter& y, const Deployment& d) {
  y.SeqField("templates", [&] {
    WriteDag(y, d);
    WriteToolStep(y, d, MakeTokenStep(d));
    if (d.staging) {
      for (const ToolStep& s : StagingSteps(d)) WriteToolStep(y, d, s);
    }
    if (HasPodGroup(d)) WriteToolStep(y, d, CreateOwnedStep(d, "create-podgroup", kPodGroup, PodGroupYaml(d)));
    WriteToolStep(y, d, CreateOwnedStep(d, "start-training", TrainingObjectKind(d), TrainingObjectYaml(d)));
    WriteToolStep(y, d, TrainStep(d));
    if (d.export_checkpoints) WriteToolStep(y, d, ExportStep(d));
    WriteExitHandler(y, d);
  });
}

void WriteSpec(YamlWriter& y, const Deployment& d) {
  y.MapField("spec", [&] {
    y.Field("entrypoint", "pipeline");
    y.Field("onExit", "exit-handler");
    y.Field("serviceAccountName", d.service_account);
    // One run of a job at a time: a second submission (or a resubmission, or
    // a second workflow from the template) waits, Pending, until the first
    // has ended, exit handler included, instead of racing it for the job's
    // token, training object and staged data.
    y.MapField("synchronization", [&] { y.SeqField("mutexes", [&] { y.Map([&] { y.Field("name", d.name); }); }); });
    // Past it Argo stops the workflow, and the exit handler stops the training.
    y.Field("activeDeadlineSeconds", d.deadline_seconds);
    y.Comment(d.deadline_from_job ? "the job's deadline" : "2 x the predicted time to train + 1 day");
    // A finished workflow is kept a week (status, failed steps' logs); deleting
    // it deletes what it owns: the training object and the token's Secret.
    y.MapField("ttlStrategy", [&] { y.Field("secondsAfterCompletion", d.keep_finished_seconds); });
    y.MapField("podGC", [&] { y.Field("strategy", "OnPodSuccess"); });
    if (d.staging) {
      y.MapField("arguments", [&] {
        y.SeqField("parameters", [&] {
          y.Map([&] {
            y.Field("name", "cleanup-staged");
            y.Field("value", d.staging->cleanup ? "true" : "false");
            y.Field("description", "delete the staged copy of the dataset when the workflow ends");
          });
        });
      });
    }
    WriteImagePullSecrets(y, d);
    y.MapField("podMetadata", [&] {
      WriteJobLabels(y, d, {{"aviflow.dev/role", "workflow-step"}});
      if (d.pod_annotations.empty()) return;
      y.MapField("annotations", [&] {
        for (const auto& [k, v] : d.pod_annotations) y.Field(k, v);
      });
    });
    std::vector<Volume> tiers;
    for (const Volume& v : d.volumes) {
      if (!v.storage.empty()) tiers.push_back(v);
    }
    for (const Volume& v : CaVolumes(d)) tiers.push_back(v);
    if (!tiers.empty()) WriteVolumes(y, tiers);
    WriteTemplates(y, d);
  });
}

}  // namespace

auto WorkflowYaml(const Deployment& d, bool as_template) -> std::string {
  std::string kind = as_template ? "WorkflowTemplate" : "Workflow";
  std::string how =
      as_template ? fmt::format("argo template create workflow.yaml; argo submit --from workflowtemplate/{}", d.name)
                  : "argo submit workflow.yaml";
  std::string header = HeaderComment(d, "workflow.yaml") +
                       fmt::format("\nFirst kubectl apply -f rbac.yaml -f plan-configmap.yaml, then {}", how);
  YamlWriter y(header);
  y.Map([&] {
    y.Field("apiVersion", "argoproj.io/v1alpha1");
    y.Field("kind", kind);
    y.MapField("metadata", [&] {
      // Each submission is a new run of the job, named NAME-xxxxx by the API
      // server; the job's mutex keeps them from running at once.
      if (as_template) y.Field("name", d.name);
      else y.Field("generateName", d.name + "-");
      if (!d.k8s_namespace.empty()) y.Field("namespace", d.k8s_namespace);
      WriteJobLabels(y, d);
    });
    WriteSpec(y, d);
  });
  return y.Output();
}

}  // namespace avf::emit
