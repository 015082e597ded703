// The artifacts of one job. Each function spells one file
// of `aviflowc FILE.avf -o DIR` from a deploy::Deployment; the output is
// deterministic: fixed key order, no timestamps, no paths of this machine.
#pragma once

#include <cstdint>
#include <string>

#include "deploy/deployment.h"

namespace avf::emit {

// Who owns an object: nobody, or the Argo workflow that creates it (an owner
// reference in Argo's variables, which Argo fills in in a step's script).
enum class Owner : uint8_t { None, Workflow };

// job.yaml: the training object (Kubeflow PyTorchJob or JobSet), preceded by
// a Volcano PodGroup when a JobSet is gang-scheduled by Volcano.
auto JobYaml(const deploy::Deployment& d) -> std::string;
// The training object alone, without header (the Argo start-training step's
// manifest, owned by the workflow).
auto TrainingObjectYaml(const deploy::Deployment& d, Owner owner) -> std::string;
// A JobSet under Volcano gets a PodGroup of its own (a PyTorchJob's operator makes one).
auto HasPodGroup(const deploy::Deployment& d) -> bool;
// That PodGroup, without header; "" when there is none.
auto PodGroupYaml(const deploy::Deployment& d, Owner owner) -> std::string;
// The apiVersion/kind of the training object, for RBAC and cleanup.
struct ObjectKind {
  std::string group, version, kind, plural;
};
auto TrainingObjectKind(const deploy::Deployment& d) -> ObjectKind;

// workflow.yaml: the Argo Workflow (or WorkflowTemplate) of stage-in, train,
// export and the exit handler.
auto WorkflowYaml(const deploy::Deployment& d, bool as_template) -> std::string;

// plan-configmap.yaml: the plan as a ConfigMap, and the claims of `pvc` tiers.
auto PlanConfigMapYaml(const deploy::Deployment& d) -> std::string;
// rbac.yaml: the workflow's ServiceAccount, Role and RoleBinding.
auto RbacYaml(const deploy::Deployment& d) -> std::string;

// slurm.sbatch: the same job as a Slurm batch script.
auto SlurmScript(const deploy::Deployment& d) -> std::string;

}  // namespace avf::emit
