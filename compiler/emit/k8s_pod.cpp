#include "emit/k8s_pod.h"

#include <fmt/format.h>

#include "emit/scripts.h"

namespace avf::emit {

namespace {

using deploy::Deployment;
using deploy::TopologyMode;
using deploy::Volume;
using deploy::VolumeKind;

constexpr std::string_view kKueuePrefix = "kueue.x-k8s.io/";
// Training pods apart from the workflow's step pods, which carry the job label too.
constexpr std::string_view kRoleLabel = "aviflow.dev/role";
constexpr std::string_view kTrainerRole = "trainer";
// avf-run catches SIGTERM and finishes the checkpoint it is writing
// (preemption and requeue, kueue#83); two minutes covers an async flush.
constexpr int64_t kTerminationGraceSeconds = 120;

// Without Kueue's topology-aware scheduling, pod affinity on the leaf label
// keeps the pods together: required when they fit under one leaf.
void WritePodAffinity(YamlWriter& y, const Deployment& d) {
  const deploy::Placement& p = d.placement;
  if (d.scheduler == deploy::Scheduler::Kueue || p.mode == TopologyMode::None) return;
  auto term = [&] {
    y.MapField("labelSelector", [&] {
      y.MapField("matchLabels", [&] {
        for (const auto& [k, v] : TrainerPodSelector(d)) y.Field(k, v);
      });
    });
    y.Field("topologyKey", p.leaf_label);
  };
  y.MapField("affinity", [&] {
    y.MapField("podAffinity", [&] {
      if (p.mode == TopologyMode::OneLeaf) {
        y.SeqField("requiredDuringSchedulingIgnoredDuringExecution", [&] { y.Map(term); });
      } else {
        y.SeqField("preferredDuringSchedulingIgnoredDuringExecution", [&] {
          y.Map([&] {
            y.Field("weight", 100);
            y.MapField("podAffinityTerm", term);
          });
        });
      }
    });
  });
}

// Kueue topology-aware scheduling, from the planner's leaf-by-leaf placement.
auto TopologyAnnotations(const Deployment& d) -> std::vector<std::pair<std::string, std::string>> {
  const deploy::Placement& p = d.placement;
  std::string k(kKueuePrefix);
  if (d.scheduler != deploy::Scheduler::Kueue) return {};
  switch (p.mode) {
    case TopologyMode::None: return {};
    case TopologyMode::OneLeaf: return {{k + "podset-required-topology", p.leaf_label}};
    case TopologyMode::Slices: {
      std::vector<std::pair<std::string, std::string>> a;
      if (p.one_spine) a.emplace_back(k + "podset-required-topology", p.spine_label);
      else a.emplace_back(k + "podset-preferred-topology", p.spine_label.empty() ? p.leaf_label : p.spine_label);
      a.emplace_back(k + "podset-slice-required-topology", p.leaf_label);
      a.emplace_back(k + "podset-slice-size", std::to_string(p.slice_nodes));
      return a;
    }
    case TopologyMode::Preferred: return {{k + "podset-preferred-topology", p.leaf_label}};
  }
  return {};
}

void WriteResources(YamlWriter& y, const deploy::Resources& r) {
  auto limited = [&] {
    if (r.gpus > 0) y.Field("nvidia.com/gpu", r.gpus);
    for (const auto& [name, count] : r.extended) y.Field(name, count);
    if (!r.memory.empty()) y.Field("memory", r.memory);
  };
  y.MapField("resources", [&] {
    y.MapField("requests", [&] {
      if (r.cpus) y.Field("cpu", std::to_string(*r.cpus));
      limited();
    });
    // No CPU limit: throttling a rank stalls every other rank at the next
    // collective; unless Guaranteed QoS is asked for (exclusive cores under
    // the kubelet's static CPU manager), which needs limits = requests.
    y.MapField("limits", [&] {
      if (r.guaranteed && r.cpus) y.Field("cpu", std::to_string(*r.cpus));
      limited();
    });
  });
}

void WriteTrainerSecurity(YamlWriter& y, const Deployment& d) {
  y.MapField("securityContext", [&] {
    y.Field("allowPrivilegeEscalation", false);
    y.Field("privileged", false);
    y.MapField("capabilities", [&] {
      y.SeqField("drop", [&] { y.String("ALL"); });
      if (d.security.ipc_lock) {
        y.SeqField("add", [&] { y.String("IPC_LOCK"); });
        y.Comment(
            "RDMA pins registered memory beyond RLIMIT_MEMLOCK; Kubernetes grants added capabilities to UID 0 only");
      }
    });
  });
}

void WritePodSecurity(YamlWriter& y, const Deployment& d, bool root) {
  y.MapField("securityContext", [&] {
    if (root) {
      y.Field("runAsUser", int64_t{0});
      y.Comment("root only for IPC_LOCK (RDMA); every other capability is dropped");
    } else {
      y.Field("runAsNonRoot", true);
      y.Field("runAsUser", d.security.user);
      y.Field("runAsGroup", d.security.group);
    }
    if (d.security.fs_group) {
      y.Field("fsGroup", *d.security.fs_group);
      y.Comment("the kubelet gives the token file (0400, root's) this group and group read: the trainer reads it");
      y.Field("fsGroupChangePolicy", "OnRootMismatch");
      y.Comment("a volume's files are regrouped only when its root does not already have this group");
    }
    y.MapField("seccompProfile", [&] { y.Field("type", "RuntimeDefault"); });
  });
}

void WritePort(YamlWriter& y, std::string_view name, int64_t port) {
  y.Map([&] {
    y.Field("name", name);
    y.Field("containerPort", port);
    y.Field("protocol", "TCP");
  });
}

void WriteTrainerContainer(YamlWriter& y, const Deployment& d, const TrainerPod& pod) {
  y.Map([&] {
    y.Field("name", pod.container);
    y.Field("image", d.image);
    y.Field("imagePullPolicy", "IfNotPresent");
    y.Key("command");
    y.StringSeq(d.command);
    std::vector<deploy::EnvVar> env = pod.rank_env;
    env.insert(env.end(), d.env.begin(), d.env.end());
    // avf-run names a node by it in its preflight and failure reports.
    env.push_back(deploy::EnvVar::FromField("AVF_NODE_NAME", "spec.nodeName"));
    WriteEnv(y, env);
    y.SeqField("ports", [&] {
      WritePort(y, "pytorchjob-port", d.port);
      if (!d.monitoring) return;
      // Local rank i's Prometheus endpoint, named for the PodMonitor.
      for (int64_t i = 0; i < d.monitoring->ports; ++i) {
        WritePort(y, d.monitoring->port_name(i), d.monitoring->port + i);
      }
    });
    WriteResources(y, d.resources);
    WriteTrainerSecurity(y, d);
    WriteMounts(y, d.volumes);
  });
}

// Before the trainer starts: each host-path tier is the declared file
// system (not an empty mount point on the node's own disk), the staged copy
// is this dataset's, and a PyTorchJob Worker waits for the Master's name, so
// that the operator's init container never spends the restart budget.
auto InitScript(const Deployment& d, const TrainerPod& pod) -> std::string {
  std::string script = TierCheckScript(d.volumes);
  if (!d.socket_interface.empty()) script += InterfaceCheckScript(d.socket_interface);
  if (d.staging) script += StagedCopyCheckScript(*d.staging);
  if (!pod.wait_for_host.empty()) {
    script += fmt::format(
        "host={}\n"
        "echo \"waiting for $host to resolve\"\n"
        "until getent hosts \"$host\" >/dev/null 2>&1 || nslookup \"$host\" >/dev/null 2>&1; do sleep 2; done\n",
        ShellQuote(pod.wait_for_host));
  }
  return script;
}

void WriteInitContainer(YamlWriter& y, const Deployment& d, const TrainerPod& pod) {
  std::string script = InitScript(d, pod);
  if (script.empty()) return;
  std::vector<Volume> tiers;
  for (const Volume& v : d.volumes) {
    if (!v.storage.empty()) tiers.push_back(v);
  }
  y.SeqField("initContainers", [&] {
    y.Map([&] {
      y.Field("name", "check-node");
      y.Field("image", d.tools_image);
      y.Field("imagePullPolicy", "IfNotPresent");
      y.Key("command");
      y.StringSeq({"sh", "-c"});
      y.Key("args");
      y.Seq([&] { y.Text(script); });
      WriteEnv(y, {NodeNameEnv()});
      y.MapField("resources", [&] {
        y.MapField("requests", [&] {
          y.Field("cpu", "100m");
          y.Field("memory", "64Mi");
        });
        // Equal to the requests: a Guaranteed pod needs it of every container.
        y.MapField("limits", [&] {
          y.Field("cpu", "100m");
          y.Field("memory", "64Mi");
        });
      });
      WriteToolsSecurity(y, d);
      if (!tiers.empty()) WriteMounts(y, tiers);
    });
  });
}

}  // namespace

auto NodeNameEnv() -> deploy::EnvVar { return deploy::EnvVar::FromField("NODE_NAME", "spec.nodeName"); }

auto JobLabelKey() -> std::string_view { return "aviflow.dev/job"; }

auto TrainerPodSelector(const Deployment& d) -> std::vector<std::pair<std::string, std::string>> {
  return {{std::string(JobLabelKey()), d.name}, {std::string(kRoleLabel), std::string(kTrainerRole)}};
}

void WriteSelectorAndTolerations(YamlWriter& y, const Deployment& d) {
  if (!d.node_selector.empty()) {
    y.MapField("nodeSelector", [&] {
      for (const auto& [k, v] : d.node_selector) y.Field(k, v);
    });
  }
  if (d.tolerations.empty()) return;
  y.SeqField("tolerations", [&] {
    for (const deploy::Toleration& t : d.tolerations) {
      y.Map([&] {
        y.Field("key", t.key);
        y.Field("operator", t.value.empty() ? "Exists" : "Equal");
        if (!t.value.empty()) y.Field("value", t.value);
        y.Field("effect", t.effect);
      });
    }
  });
}

auto HeaderComment(const Deployment& d, std::string_view artifact) -> std::string {
  return fmt::format("{}: generated by aviflowc from {}, job `{}`; do not edit.\nplan sha256: {}", artifact,
                     d.source_name, d.job, d.plan_sha256);
}

auto JobLabels(const Deployment& d) -> std::vector<std::pair<std::string, std::string>> {
  std::vector<std::pair<std::string, std::string>> labels{{"app.kubernetes.io/managed-by", "aviflowc"},
                                                          {"app.kubernetes.io/name", "aviflow"},
                                                          {std::string(JobLabelKey()), d.name}};
  labels.insert(labels.end(), d.extra_labels.begin(), d.extra_labels.end());
  return labels;
}

void WriteImagePullSecrets(YamlWriter& y, const Deployment& d) {
  if (d.image_pull_secrets.empty()) return;
  y.SeqField("imagePullSecrets", [&] {
    for (const std::string& s : d.image_pull_secrets) y.Map([&] { y.Field("name", s); });
  });
}

void WriteJobLabels(YamlWriter& y, const Deployment& d, const std::vector<std::pair<std::string, std::string>>& extra) {
  y.MapField("labels", [&] {
    for (const auto& [k, v] : JobLabels(d)) y.Field(k, v);
    for (const auto& [k, v] : extra) y.Field(k, v);
  });
}

void WriteMetadata(YamlWriter& y, const Deployment& d, std::string_view name,
                   const std::vector<std::pair<std::string, std::string>>& extra_labels, Owner owner) {
  y.MapField("metadata", [&] {
    y.Field("name", name);
    if (!d.k8s_namespace.empty()) y.Field("namespace", d.k8s_namespace);
    WriteJobLabels(y, d, extra_labels);
    if (owner == Owner::None) return;
    // Deleting the workflow deletes the object (blockOwnerDeletion: not before it is gone).
    y.SeqField("ownerReferences", [&] {
      y.Map([&] {
        y.Field("apiVersion", "argoproj.io/v1alpha1");
        y.Field("kind", "Workflow");
        y.Field("name", "{{workflow.name}}");
        y.Field("uid", "{{workflow.uid}}");
        y.Field("blockOwnerDeletion", true);
      });
    });
  });
}

void WriteEnv(YamlWriter& y, const std::vector<deploy::EnvVar>& env) {
  if (env.empty()) return;
  y.SeqField("env", [&] {
    for (const deploy::EnvVar& e : env) {
      y.Map([&] {
        y.Field("name", e.name);
        if (!e.field_path.empty()) {
          y.MapField("valueFrom", [&] { y.MapField("fieldRef", [&] { y.Field("fieldPath", e.field_path); }); });
        } else if (!e.secret_name.empty()) {
          y.MapField("valueFrom", [&] {
            y.MapField("secretKeyRef", [&] {
              y.Field("name", e.secret_name);
              y.Field("key", e.secret_key);
            });
          });
        } else {
          y.Field("value", e.value);
          if (!e.note.empty()) y.Comment(e.note);
        }
      });
    }
  });
}

void WriteVolumes(YamlWriter& y, const std::vector<Volume>& volumes) {
  y.SeqField("volumes", [&] {
    for (const Volume& v : volumes) {
      y.Map([&] {
        y.Field("name", v.name);
        switch (v.kind) {
          case VolumeKind::HostPath:
            y.MapField("hostPath", [&] {
              y.Field("path", v.source);
              y.Field("type", "Directory");
            });
            break;
          case VolumeKind::Claim: y.MapField("persistentVolumeClaim", [&] { y.Field("claimName", v.source); }); break;
          case VolumeKind::ConfigMap: y.MapField("configMap", [&] { y.Field("name", v.source); }); break;
          case VolumeKind::Secret:
            y.MapField("secret", [&] {
              y.Field("secretName", v.source);
              y.Field("defaultMode", v.file_mode);
              if (!v.note.empty()) y.Comment(v.note);
              if (v.item.empty()) return;
              // Only this key of the Secret becomes a file (of its own name).
              y.SeqField("items", [&] {
                y.Map([&] {
                  y.Field("key", v.item);
                  y.Field("path", v.item);
                });
              });
            });
            break;
          case VolumeKind::Memory:
            y.MapField("emptyDir", [&] {
              y.Field("medium", "Memory");
              y.Field("sizeLimit", v.size_limit);
            });
            break;
        }
      });
    }
  });
}

void WriteMounts(YamlWriter& y, const std::vector<Volume>& volumes) {
  y.SeqField("volumeMounts", [&] {
    for (const Volume& v : volumes) {
      y.Map([&] {
        y.Field("name", v.name);
        y.Field("mountPath", v.mount_path);
        if (v.read_only) y.Field("readOnly", true);
        // A remount on the host (a file-system client restarted) reaches the container.
        if (v.kind == VolumeKind::HostPath) y.Field("mountPropagation", "HostToContainer");
      });
    }
  });
}

void WriteTrainerTemplate(YamlWriter& y, const Deployment& d, const TrainerPod& pod) {
  y.MapField("template", [&] {
    y.MapField("metadata", [&] {
      WriteJobLabels(y, d, {{std::string(kRoleLabel), std::string(kTrainerRole)}});
      std::vector<std::pair<std::string, std::string>> annotations = pod.annotations;
      for (const auto& a : TopologyAnnotations(d)) annotations.push_back(a);
      annotations.insert(annotations.end(), d.trainer_annotations.begin(), d.trainer_annotations.end());
      if (!pod.podset_group.empty() && d.scheduler == deploy::Scheduler::Kueue &&
          d.placement.mode != TopologyMode::None) {
        annotations.emplace_back(std::string(kKueuePrefix) + "podset-group-name", pod.podset_group);
      }
      if (annotations.empty()) return;
      y.MapField("annotations", [&] {
        for (const auto& [k, v] : annotations) y.Field(k, v);
      });
    });
    y.MapField("spec", [&] {
      if (!pod.restart_policy.empty()) y.Field("restartPolicy", pod.restart_policy);
      // avf-run never talks to the API server: no credentials in its pods.
      y.Field("automountServiceAccountToken", false);
      WriteImagePullSecrets(y, d);
      if (d.scheduler == deploy::Scheduler::Volcano) y.Field("schedulerName", "volcano");
      if (!d.priority.empty()) y.Field("priorityClassName", d.priority);
      y.Field("terminationGracePeriodSeconds", kTerminationGraceSeconds);
      WriteSelectorAndTolerations(y, d);
      WritePodAffinity(y, d);
      WritePodSecurity(y, d, d.security.ipc_lock);
      WriteInitContainer(y, d, pod);
      y.SeqField("containers", [&] { WriteTrainerContainer(y, d, pod); });
      WriteVolumes(y, d.volumes);
    });
  });
}

void WriteToolsSecurity(YamlWriter& y, const Deployment& d) {
  y.MapField("securityContext", [&] {
    y.Field("runAsNonRoot", true);
    y.Field("runAsUser", d.security.user);
    y.Field("runAsGroup", d.security.group);
    y.Field("allowPrivilegeEscalation", false);
    y.MapField("capabilities", [&] { y.SeqField("drop", [&] { y.String("ALL"); }); });
    y.MapField("seccompProfile", [&] { y.Field("type", "RuntimeDefault"); });
  });
}

}  // namespace avf::emit
