// The one path from a file's plans to their lowered deployments, with every
// diagnostic of lowering: each plan's plan.json bytes (emit::WritePlanJson)
// and their SHA-256, deploy::Lower, then the checks across the file's jobs
// (E0913, Kubernetes names that coincide). Compiling, `emit`, `check` and
// `plan` (driver/outputs.cpp) and the language server (lsp/analysis.cpp)
// all lower through it, so that they report the same diagnostics.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "deploy/deployment.h"
#include "diag/diagnostic.h"
#include "plan/plan.h"

namespace avf::emit {

// A job on `local` storage runs on this machine and has no cluster
// manifests (deploy::LocalTierOf).
enum class LocalJobs {
  Skip,    // not lowered, no diagnostic (check, plan, the language server)
  Report,  // not lowered, W0910: only its plan.json is written (compile)
  Lower,   // lowered like any other (emit: the artifact asked for)
};

struct LowerPlansOptions {
  std::string source_name;  // the main file as given, for the header comments
  LocalJobs local_jobs = LocalJobs::Skip;
  // `emit`: the target of the artifact asked for, per job; unset (or
  // nullopt): the job's own `target`.
  std::function<std::optional<deploy::Target>(const check::JobSpec&)> target;
  // deploy::LowerOptions::writes_pods: false for `emit trainer|monitoring`.
  bool writes_pods = true;
};

struct LoweredPlan {
  const plan::Plan* plan = nullptr;
  std::string plan_json;                         // the exact bytes of plan.json
  bool local = false;                            // a job on `local` storage that was not lowered
  std::optional<deploy::Deployment> deployment;  // nullopt: local, or it cannot be deployed (diagnosed)
};

// One entry per plan, in order.
auto LowerPlans(const std::vector<plan::Plan>& plans, const LowerPlansOptions& options, diag::DiagnosticEngine& diags)
    -> std::vector<LoweredPlan>;

}  // namespace avf::emit
