// Phase 7: a planned job -> its Deployment, the cluster-side decisions of
// the manifests, with the diagnostics of everything a cluster would reject
// (names, resources beyond the node, storage the pods cannot reach).
#pragma once

#include <optional>
#include <string>

#include "deploy/deployment.h"
#include "diag/diagnostic.h"
#include "plan/plan.h"

namespace avf::deploy {

struct LowerOptions {
  std::string source_name;  // the main file as given, for the header comments
  std::string plan_json;    // the exact bytes written as plan.json
  std::string plan_sha256;  // of plan_json
  // `emit slurm` of a Kubernetes job (and `emit argo|k8s` of a Slurm job):
  // the artifact asked for, whatever the job's `target`.
  std::optional<Target> target;
  // Whether the output holds the training pods (manifests, a batch script):
  // false for `emit trainer` and `emit monitoring`, where the pods' CPU and
  // memory requests reach nothing and W0932 is not reported.
  bool writes_pods = true;
};

// nullopt when the job cannot be deployed to its target (the diagnostics say why).
auto Lower(const plan::Plan& plan, const LowerOptions& options, diag::DiagnosticEngine& diags)
    -> std::optional<Deployment>;

// The first `local` tier the job reads or writes: such a job runs on this
// machine (`aviflowc run --local`) and has no cluster manifests.
auto LocalTierOf(const check::JobSpec& job) -> std::optional<check::Location>;

// A ConfigMap holds at most 1 MiB; the plan must leave room for the object's
// metadata.
inline constexpr size_t kMaxConfigMapPlanBytes = 1000000;

}  // namespace avf::deploy
