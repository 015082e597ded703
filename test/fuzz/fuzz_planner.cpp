// Feeds arbitrary bytes through every phase as a .avf file that may import
// the real stdlib: sema, the job checks, the `auto` search, the rank tables,
// both plan writers, the lowering to a deployment for every target and every
// artifact (workflow, job, ConfigMap, RBAC, Slurm). Any crash, hang, leak or
// sanitizer report is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <llvm/Support/raw_ostream.h>

#include "check/check.h"
#include "deploy/lower.h"
#include "diag/render.h"
#include "emit/manifests.h"
#include "emit/plan_json.h"
#include "emit/plan_report.h"
#include "imports/imports.h"
#include "plan/planner.h"
#include "sema/sema.h"

namespace {

// One scratch file per fuzzing process; `import "./x"` resolves beside it.
auto ScratchPath() -> const std::string& {
  static const std::string path = "/tmp/avf-fuzz-planner-" + std::to_string(getpid()) + ".avf";
  return path;
}

// Every artifact of every target; their text is discarded.
void EmitAll(const avf::plan::Plan& plan, avf::diag::DiagnosticEngine& diags) {
  std::string json;
  llvm::raw_string_ostream stream(json);
  avf::emit::WritePlanJson(plan, stream);
  stream.flush();
  using avf::deploy::Target;
  for (Target target : {Target::Kubeflow, Target::JobSet, Target::Slurm}) {
    avf::deploy::LowerOptions options{"fuzz.avf", json, "0", target};
    auto d = avf::deploy::Lower(plan, options, diags);
    if (!d) continue;
    size_t bytes = 0;
    if (target == Target::Slurm) {
      bytes += avf::emit::SlurmScript(*d).size();
      continue;
    }
    bytes += avf::emit::WorkflowYaml(*d, false).size() + avf::emit::WorkflowYaml(*d, true).size();
    bytes += avf::emit::JobYaml(*d).size() + avf::emit::PlanConfigMapYaml(*d).size() + avf::emit::RbacYaml(*d).size();
    bytes += avf::emit::MonitoringYaml(*d).size();
    if (bytes == 0) __builtin_trap();  // every artifact has at least its header
  }
}

void PlanAll(const avf::sema::Program& program, avf::diag::DiagnosticEngine& diags) {
  llvm::raw_null_ostream null;
  avf::plan::PlanOptions options;
  options.alternatives = 2;
  options.tables = true;
  for (const avf::check::CheckedJob& job : avf::check::CheckJobs(program, diags)) {
    if (!job.ok) continue;
    auto plan = avf::plan::PlanJob(job.spec, options, diags);
    if (!plan) continue;
    avf::emit::WritePlanJson(*plan, null);
    avf::emit::WritePlanTable(*plan, /*legend=*/true, null);
    avf::emit::WritePlanSummaryJson(*plan, null);
    EmitAll(*plan, diags);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(ScratchPath(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  avf::source::SourceSet sources;
  avf::diag::DiagnosticEngine diags;
  avf::imports::SearchPaths paths;
  paths.stdlib_dirs = {AVIFLOW_STDLIB_DIR};
  avf::imports::ModuleSet modules = avf::imports::LoadModules(ScratchPath(), paths, sources, diags);
  if (modules.main_loaded && !diags.has_errors()) {
    avf::sema::Program program = avf::sema::Analyze(modules, diags);
    if (!diags.has_errors()) PlanAll(program, diags);
  }
  llvm::raw_null_ostream null;
  avf::diag::RenderText(sources.mgr(), diags, null, /*color=*/false);
  return 0;
}
