#include "emit/lower_plans.h"

#include <utility>

#include <fmt/format.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/SHA256.h>

#include "deploy/lower.h"
#include "emit/plan_json.h"

namespace avf::emit {

namespace {

auto Sha256(const std::string& text) -> std::string {
  llvm::SHA256 hash;
  hash.update(text);
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

// Two jobs whose Kubernetes names coincide (`Train_A`, `train_a`) would
// overwrite each other's objects in one namespace.
void CheckNameClashes(const std::vector<LoweredPlan>& lowered, diag::DiagnosticEngine& diags) {
  std::vector<std::pair<const plan::Plan*, std::string>> names;  // namespace/name of each cluster job
  for (const LoweredPlan& l : lowered) {
    if (l.deployment && l.deployment->target != deploy::Target::Slurm) {
      names.emplace_back(l.plan, l.deployment->k8s_namespace + "/" + l.deployment->name);
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (names[i].second != names[j].second) continue;
      const check::JobSpec& a = names[j].first->job;
      const check::JobSpec& b = names[i].first->job;
      diags
          .Report(diag::DiagId::KubernetesNameClash, b.name_range, b.name, a.name,
                  names[i].second.substr(names[i].second.find('/') + 1))
          .Note(a.name_range, fmt::format("job `{}` is declared here", a.name))
          .Help("rename one of the jobs, or give them different `namespace`s");
      break;
    }
  }
}

}  // namespace

auto LowerPlans(const std::vector<plan::Plan>& plans, const LowerPlansOptions& options, diag::DiagnosticEngine& diags)
    -> std::vector<LoweredPlan> {
  std::vector<LoweredPlan> lowered;
  lowered.reserve(plans.size());
  for (const plan::Plan& plan : plans) {
    LoweredPlan& l = lowered.emplace_back();
    l.plan = &plan;
    llvm::raw_string_ostream stream(l.plan_json);
    WritePlanJson(plan, stream);
    stream.flush();
    if (options.local_jobs != LocalJobs::Lower) {
      if (auto local = deploy::LocalTierOf(plan.job)) {
        l.local = true;
        if (options.local_jobs == LocalJobs::Report) {
          diags.Report(diag::DiagId::LocalJobNotEmitted, local->decl_range, plan.job.name, local->storage);
        }
        continue;
      }
    }
    std::optional<deploy::Target> target = options.target ? options.target(plan.job) : std::nullopt;
    deploy::LowerOptions lower{options.source_name, l.plan_json, Sha256(l.plan_json), target, options.writes_pods};
    l.deployment = deploy::Lower(plan, lower, diags);
  }
  CheckNameClashes(lowered, diags);
  return lowered;
}

}  // namespace avf::emit
