// Pieces of Kubernetes pods shared by every emitter: labels, environment,
// volumes, the training pod template and the security contexts. They spell
// a deploy::Deployment; every decision was taken in deploy/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "deploy/deployment.h"
#include "emit/yaml_writer.h"

namespace avf::emit {

// The comment every artifact starts with: tool, source, job, plan hash.
auto HeaderComment(const deploy::Deployment& d, std::string_view artifact) -> std::string;

// Who owns an object: nobody, or the Argo workflow that creates it (an owner
// reference in Argo's variables, which Argo fills in in a step's script).
enum class Owner : uint8_t { None, Workflow };

// `metadata:` with name, namespace, the job's labels and the owner.
void WriteMetadata(YamlWriter& y, const deploy::Deployment& d, std::string_view name,
                   const std::vector<std::pair<std::string, std::string>>& extra_labels = {},
                   Owner owner = Owner::None);
void WriteJobLabels(YamlWriter& y, const deploy::Deployment& d,
                    const std::vector<std::pair<std::string, std::string>>& extra = {});
// The labels every object of the job carries (WriteJobLabels writes them).
auto JobLabels(const deploy::Deployment& d) -> std::vector<std::pair<std::string, std::string>>;

void WriteEnv(YamlWriter& y, const std::vector<deploy::EnvVar>& env);
// `imagePullSecrets` of the job's `pod.image_pull_secrets`, if any.
void WriteImagePullSecrets(YamlWriter& y, const deploy::Deployment& d);
void WriteVolumes(YamlWriter& y, const std::vector<deploy::Volume>& volumes);
void WriteMounts(YamlWriter& y, const std::vector<deploy::Volume>& volumes);

// How one kind of training object wants its pods.
struct TrainerPod {
  std::string container = "pytorch";     // PyTorchJob requires this name
  std::string restart_policy;            // "" leaves it to the training object
  std::vector<deploy::EnvVar> rank_env;  // rendezvous variables the object does not set
  std::string podset_group;              // Kueue: PodSets placed together
  std::vector<std::pair<std::string, std::string>> annotations;
  // A host name the pod waits for before it starts (a PyTorchJob Worker: the
  // Master's, which the operator's own init container gives 200 s at most).
  std::string wait_for_host;
};

// `template:` of a training pod: metadata (labels, Kueue topology
// annotations) and spec (scheduling, security, the avf-run container).
void WriteTrainerTemplate(YamlWriter& y, const deploy::Deployment& d, const TrainerPod& pod);

// `nodeSelector` and `tolerations` of the cluster's nodes (labels, taints).
void WriteSelectorAndTolerations(YamlWriter& y, const deploy::Deployment& d);

// The node's name, for the messages of the checks a pod makes of its node.
auto NodeNameEnv() -> deploy::EnvVar;

// Security context of the staging, export and cleanup containers.
void WriteToolsSecurity(YamlWriter& y, const deploy::Deployment& d);

// The training object's label selector value for pod affinity and cleanup.
auto JobLabelKey() -> std::string_view;
// The labels that select exactly this job's training pods (not the
// workflow's step pods): pod affinity, the PodMonitor.
auto TrainerPodSelector(const deploy::Deployment& d) -> std::vector<std::pair<std::string, std::string>>;

}  // namespace avf::emit
