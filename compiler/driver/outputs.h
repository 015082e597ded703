// The artifacts of `aviflowc FILE.avf [-o DIR]` and `emit argo|k8s|slurm`:
// lowers each plan (deploy::Lower) and spells its files (emit/manifests.h).
// Nothing is written unless every job lowered without errors, and every file
// is written to a temporary name before any is renamed into place, so a
// write error leaves the previous files as they were.
#pragma once

#include <vector>

#include <llvm/Support/raw_ostream.h>

#include "diag/diagnostic.h"
#include "driver/options.h"
#include "plan/plan.h"

namespace avf::driver {

void WriteArtifacts(const Options& o, const std::vector<plan::Plan>& plans, diag::DiagnosticEngine& diags,
                    llvm::raw_ostream& out);

}  // namespace avf::driver
