// Shared by the lowering files: what each step reads and writes.
#pragma once

#include <string>

#include "deploy/deployment.h"
#include "diag/diagnostic.h"
#include "plan/plan.h"

namespace avf::deploy {

struct LowerContext {
  const plan::Plan& plan;
  const check::JobSpec& job;
  diag::DiagnosticEngine& diags;
  Deployment& out;
  auto ok() const -> bool { return !diags.has_errors(); }
};

// Storage, staging and checkpoint export (lower_storage.cpp).
void LowerStorage(LowerContext& c);

// `80GB` -> "74505Mi": bytes as a Kubernetes quantity, rounded down to MiB
// (to GiB when that is exact) so a request never exceeds what was asked.
auto Quantity(double bytes) -> std::string;

// Reports E0903 when `text` holds what a shell script or an Argo template
// would misread: control characters, or Argo's `{{`.
auto CheckScriptSafe(LowerContext& c, const std::string& text, const std::string& what, llvm::SMRange at) -> bool;

}  // namespace avf::deploy
