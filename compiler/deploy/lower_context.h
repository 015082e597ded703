// Shared by the lowering files: what each step reads and writes.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "deploy/deployment.h"
#include "diag/diagnostic.h"
#include "plan/plan.h"

namespace avf::deploy {

struct LowerContext {
  const plan::Plan& plan;
  const check::JobSpec& job;
  diag::DiagnosticEngine& diags;
  Deployment& out;
  bool writes_pods = true;      // LowerOptions::writes_pods
  bool repeated_error = false;  // an error this job shares with an earlier one
  auto ok() const -> bool { return !diags.has_errors(); }

  // Reports a diagnostic, once: jobs that share a cluster, a storage tier or
  // a dataset hear about its problems once (the same code, place and
  // message), and a job whose error was already reported still fails.
  template <diag::DiagIndex I, typename... Args>
  auto Report(diag::DiagTag<I> id, llvm::SMRange at, const Args&... args) -> diag::DiagnosticBuilder {
    std::string message = diag::FormatMessage(id, args...);
    for (const diag::Diagnostic& d : diags.diagnostics()) {
      if (d.id != id || d.loc != at.Start || d.message != message) continue;
      if (d.severity == diag::Severity::Error) repeated_error = true;
      return diag::DiagnosticBuilder(nullptr, SIZE_MAX);
    }
    return diags.Report(id, at, args...);
  }
};

// Storage, staging and checkpoint export (lower_storage.cpp).
void LowerStorage(LowerContext& c);
// What the site adds to the pods: pull Secrets, environment, labels,
// annotations, QoS, Multus networks (lower_pod.cpp); after the environment
// and resources are lowered.
void LowerSiteNeeds(LowerContext& c);

// avf-run's metrics endpoint (its flags, the pod's IP) and the alerts'
// thresholds, for a job that runs avf-run (lower_monitoring.cpp); after the
// command is lowered, before the site's environment.
void LowerMonitoring(LowerContext& c);

// The training pods' command for torchtitan or Megatron-LM in place of
// avf-run's, and the name of its configuration file (lower_trainer.cpp);
// after the avf-run command is lowered (the trainer paths).
void LowerTrainerCommand(LowerContext& c);

// `80GB` -> "74505Mi": bytes as a Kubernetes quantity, rounded down to MiB
// (to GiB when that is exact) so a request never exceeds what was asked.
auto Quantity(double bytes) -> std::string;

// `text` for a message: control characters written as the escapes that
// produce them (`\n`, `\u{7f}`), so that a diagnostic stays on its line.
auto Printable(const std::string& text) -> std::string;

// Reports E0903 when `text` holds what a shell script or an Argo template
// would misread: control characters, or Argo's `{{`.
auto CheckScriptSafe(LowerContext& c, const std::string& text, const std::string& what, llvm::SMRange at) -> bool;

}  // namespace avf::deploy
