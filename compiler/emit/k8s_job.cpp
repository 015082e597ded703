// job.yaml: the training object. PyTorchJob: one Master pod and N-1 Worker
// pods, the operator sets the rendezvous variables; an elastic job's is
// Worker pods only, as many as its most nodes, under an elasticPolicy. JobSet:
// one indexed Job of N pods, restarted whole on any failure; we set the
// variables ourselves.
#include <fmt/format.h>

#include "emit/k8s_pod.h"
#include "emit/manifests.h"
#include "plan_format/launch.h"

namespace avf::emit {

namespace {

using deploy::Deployment;
using deploy::EnvVar;
using deploy::Scheduler;

constexpr std::string_view kReplicatedJob = "node";
// avf-run's exit status when SIGTERM stopped it (128 + 15).
constexpr int64_t kStoppedBySignalStatus = 143;

// Kueue admits by queue, and orders a queue's workloads by the
// WorkloadPriorityClass the job names (the pods' PriorityClass only decides
// preemption once they run).
auto QueueLabels(const Deployment& d) -> std::vector<std::pair<std::string, std::string>> {
  if (d.scheduler != Scheduler::Kueue) return {};
  std::vector<std::pair<std::string, std::string>> labels;
  if (!d.queue.empty()) labels.emplace_back("kueue.x-k8s.io/queue-name", d.queue);
  if (!d.priority.empty()) labels.emplace_back("kueue.x-k8s.io/priority-class", d.priority);
  return labels;
}

// An elastic job is admitted once its fewest nodes can start.
auto GangSize(const Deployment& d) -> int64_t { return d.elastic_nodes.empty() ? d.nodes : d.elastic_nodes.back(); }

void WriteVolcanoPolicy(YamlWriter& y, const Deployment& d) {
  y.MapField("schedulingPolicy", [&] {
    y.Field("minAvailable", GangSize(d));
    if (!d.queue.empty()) y.Field("queue", d.queue);
    if (!d.priority.empty()) y.Field("priorityClass", d.priority);
  });
}

void WriteReplica(YamlWriter& y, const Deployment& d, std::string_view type, int64_t replicas) {
  y.MapField(type, [&] {
    y.Field("replicas", replicas);
    // A failed rank makes every other rank exit; each pod restarts in place
    // and the ranks rendezvous again, resuming from the last checkpoint.
    y.Field("restartPolicy", "OnFailure");
    TrainerPod pod;
    pod.podset_group = "trainers";
    if (!d.elastic_nodes.empty()) {
      // The launcher's slot (run/elastic_launcher.h); slot 0, worker 0, hosts the rounds.
      pod.rank_env.push_back(
          EnvVar::FromField(plan_format::kEnvNodeSlot, "metadata.labels['training.kubeflow.org/replica-index']"));
    } else if (type == "Worker") {
      pod.wait_for_host = d.name + "-master-0";  // the operator's name of the Master's Service
    }
    WriteTrainerTemplate(y, d, pod);
  });
}

// The operator sets PET_NNODES=MIN:MAX, PET_RDZV_ENDPOINT (worker 0's Service
// and this port) and PET_MAX_RESTARTS, which avf-run's launchers read.
void WriteElasticPolicy(YamlWriter& y, const Deployment& d) {
  y.MapField("elasticPolicy", [&] {
    y.Field("minReplicas", d.elastic_nodes.back());
    y.Field("maxReplicas", d.elastic_nodes.front());
    y.Field("maxRestarts", d.max_restarts);
    y.Field("rdzvPort", d.port);
  });
}

void WritePyTorchJob(YamlWriter& y, const Deployment& d, Owner owner) {
  y.Map([&] {
    y.Field("apiVersion", "kubeflow.org/v1");
    y.Field("kind", "PyTorchJob");
    WriteMetadata(y, d, d.name, QueueLabels(d), owner);
    y.MapField("spec", [&] {
      y.Field("nprocPerNode", std::to_string(d.procs_per_node));
      if (!d.elastic_nodes.empty()) WriteElasticPolicy(y, d);
      y.MapField("runPolicy", [&] {
        // Counted per pod restart: one incident restarts every pod once.
        y.Field("backoffLimit", d.backoff_limit);
        y.Comment(fmt::format("max_restarts {} x {} pods + 1: the job fails when the restarts reach it", d.max_restarts,
                              d.elastic_nodes.empty() ? d.nodes : d.elastic_nodes.front()));
        y.Field("cleanPodPolicy", "Running");
        y.Field("ttlSecondsAfterFinished", d.keep_finished_seconds);
        if (d.scheduler == Scheduler::Volcano) WriteVolcanoPolicy(y, d);
      });
      y.MapField("pytorchReplicaSpecs", [&] {
        if (!d.elastic_nodes.empty()) {
          WriteReplica(y, d, "Worker", d.elastic_nodes.front());
          return;
        }
        WriteReplica(y, d, "Master", 1);
        if (d.nodes > 1) WriteReplica(y, d, "Worker", d.nodes - 1);
      });
    });
  });
}

auto JobSetRankEnv(const Deployment& d) -> std::vector<EnvVar> {
  std::string master = fmt::format("{}-{}-0-0.{}", d.name, kReplicatedJob, d.name);
  return {
      EnvVar::Literal(plan_format::kEnvMasterAddr, master),
      EnvVar::Literal(plan_format::kEnvMasterPort, std::to_string(d.port)),
      EnvVar::Literal(plan_format::kEnvNodes, std::to_string(d.nodes)),
      EnvVar::Literal(plan_format::kEnvRanksPerNode, std::to_string(d.procs_per_node)),
      EnvVar::FromField(plan_format::kEnvNodeRank, "metadata.annotations['batch.kubernetes.io/job-completion-index']"),
  };
}

// A pod preempted, evicted by a drain or lost with its node (condition
// DisruptionTarget), or a trainer stopped by SIGTERM (exit 143: avf-run
// checkpoints and all ranks stop together), fails the Job with reason
// PodFailurePolicy, which the JobSet's rule restarts for free.
void WriteDisruptionPolicy(YamlWriter& y) {
  y.MapField("podFailurePolicy", [&] {
    y.SeqField("rules", [&] {
      y.Map([&] {
        y.Field("action", "FailJob");
        y.SeqField("onPodConditions", [&] {
          y.Map([&] {
            y.Field("type", "DisruptionTarget");
            y.Field("status", "True");
          });
        });
      });
      y.Map([&] {
        y.Field("action", "FailJob");
        y.MapField("onExitCodes", [&] {
          y.Field("containerName", "trainer");
          y.Field("operator", "In");
          y.SeqField("values", [&] { y.Int(kStoppedBySignalStatus); });
        });
      });
    });
  });
}

void WriteJobSet(YamlWriter& y, const Deployment& d, Owner owner) {
  y.Map([&] {
    y.Field("apiVersion", "jobset.x-k8s.io/v1alpha2");
    y.Field("kind", "JobSet");
    WriteMetadata(y, d, d.name, QueueLabels(d), owner);
    y.MapField("spec", [&] {
      // Any pod failure fails its Job, and JobSet recreates every Job: all
      // ranks restart together and resume from the last checkpoint.
      y.MapField("failurePolicy", [&] {
        y.Field("maxRestarts", d.max_restarts);
        // A Job failed by its pod failure policy (a disruption, below) is
        // not the run's fault: restarted without spending maxRestarts.
        y.SeqField("rules", [&] {
          y.Map([&] {
            y.Field("name", "DisruptionsAreFree");
            y.Field("action", "RestartJobSetAndIgnoreMaxRestarts");
            y.Key("onJobFailureReasons");
            y.StringSeq({"PodFailurePolicy"});
          });
        });
      });
      y.Field("ttlSecondsAfterFinished", d.keep_finished_seconds);
      y.MapField("network", [&] {
        y.Field("enableDNSHostnames", true);
        y.Field("publishNotReadyAddresses", true);
      });
      y.SeqField("replicatedJobs", [&] {
        y.Map([&] {
          y.Field("name", kReplicatedJob);
          y.Field("replicas", 1);
          y.MapField("template", [&] {
            y.MapField("spec", [&] {
              y.Field("parallelism", d.nodes);
              y.Field("completions", d.nodes);
              y.Field("completionMode", "Indexed");
              y.Field("backoffLimit", 0);
              WriteDisruptionPolicy(y);
              TrainerPod pod;
              pod.container = "trainer";
              pod.restart_policy = "Never";
              pod.rank_env = JobSetRankEnv(d);
              if (d.scheduler == Scheduler::Volcano)
                pod.annotations.emplace_back("scheduling.k8s.io/group-name", d.name);
              WriteTrainerTemplate(y, d, pod);
            });
          });
        });
      });
    });
  });
}

void WritePodGroup(YamlWriter& y, const Deployment& d, Owner owner) {
  y.Map([&] {
    y.Field("apiVersion", "scheduling.volcano.sh/v1beta1");
    y.Field("kind", "PodGroup");
    WriteMetadata(y, d, d.name, {}, owner);
    y.MapField("spec", [&] {
      y.Field("minMember", GangSize(d));
      if (!d.queue.empty()) y.Field("queue", d.queue);
      if (!d.priority.empty()) y.Field("priorityClassName", d.priority);
    });
  });
}

}  // namespace

auto HasPodGroup(const Deployment& d) -> bool {
  return d.target == deploy::Target::JobSet && d.scheduler == Scheduler::Volcano;
}

auto TrainingObjectKind(const Deployment& d) -> ObjectKind {
  if (d.target == deploy::Target::JobSet) return {"jobset.x-k8s.io", "jobsets"};
  return {"kubeflow.org", "pytorchjobs"};
}

auto TrainingObjectYaml(const Deployment& d) -> std::string {
  YamlWriter y("");
  if (d.target == deploy::Target::JobSet) WriteJobSet(y, d, Owner::Workflow);
  else WritePyTorchJob(y, d, Owner::Workflow);
  return y.Output();
}

auto PodGroupYaml(const Deployment& d) -> std::string {
  if (!HasPodGroup(d)) return "";
  YamlWriter y("");
  WritePodGroup(y, d, Owner::Workflow);
  return y.Output();
}

auto JobYaml(const Deployment& d) -> std::string {
  // Without Argo nothing makes the token's Secret: the header says so.
  std::string header =
      HeaderComment(d, "job.yaml") + fmt::format(
                                         "\nApply after plan-configmap.yaml and the job token's Secret {} (key `{}`;\n"
                                         "docs/deploy.md, \"The job token\"): kubectl apply -f job.yaml",
                                         d.token.secret, d.token.key);
  YamlWriter y(header);
  if (HasPodGroup(d)) {
    WritePodGroup(y, d, Owner::None);
    y.NewDocument();
  }
  if (d.target == deploy::Target::JobSet) WriteJobSet(y, d, Owner::None);
  else WritePyTorchJob(y, d, Owner::None);
  return y.Output();
}

}  // namespace avf::emit
