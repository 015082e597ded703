// The artifacts of one job. Each function spells one file
// of `aviflowc FILE.avf -o DIR` from a deploy::Deployment; the output is
// deterministic: fixed key order, no timestamps, no paths of this machine.
#pragma once

#include <string>

#include "deploy/deployment.h"

namespace avf::emit {

// job.yaml: the training object (Kubeflow PyTorchJob or JobSet), preceded by
// a Volcano PodGroup when a JobSet is gang-scheduled by Volcano.
auto JobYaml(const deploy::Deployment& d) -> std::string;
// The training object alone, without header (the Argo start-training step's
// manifest, owned by the workflow).
auto TrainingObjectYaml(const deploy::Deployment& d) -> std::string;
// A JobSet under Volcano gets a PodGroup of its own (a PyTorchJob's operator makes one).
auto HasPodGroup(const deploy::Deployment& d) -> bool;
// That PodGroup, without header, owned by the workflow (its create-podgroup
// step's manifest); "" when there is none.
auto PodGroupYaml(const deploy::Deployment& d) -> std::string;
// The apiVersion/kind of the training object, for RBAC and cleanup.
struct ObjectKind {
  std::string group, plural;
};
auto TrainingObjectKind(const deploy::Deployment& d) -> ObjectKind;

// workflow.yaml: the Argo Workflow (or WorkflowTemplate) of stage-in, train,
// export and the exit handler.
auto WorkflowYaml(const deploy::Deployment& d, bool as_template) -> std::string;

// plan-configmap.yaml: the plan as a ConfigMap, and the claims of `pvc` tiers.
auto PlanConfigMapYaml(const deploy::Deployment& d) -> std::string;
// rbac.yaml: the workflow's ServiceAccount, Role and RoleBinding.
auto RbacYaml(const deploy::Deployment& d) -> std::string;

// monitoring.yaml: the PodMonitor of avf-run's metrics ports and the job's
// alerts (a PrometheusRule), for the Prometheus Operator; "" for a job that
// does not run avf-run.
auto MonitoringYaml(const deploy::Deployment& d) -> std::string;

// slurm.sbatch: the same job as a Slurm batch script.
auto SlurmScript(const deploy::Deployment& d) -> std::string;

}  // namespace avf::emit
