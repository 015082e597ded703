// Feeds arbitrary bytes through every phase as a .avf file that may import
// the real stdlib: sema, the job checks, the `auto` search, the rank tables
// and both plan writers. Any crash, hang, leak or sanitizer report is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <llvm/Support/raw_ostream.h>

#include "check/check.h"
#include "diag/render.h"
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

void PlanAll(const avf::sema::Program& program, avf::diag::DiagnosticEngine& diags) {
  llvm::raw_null_ostream null;
  avf::plan::PlanOptions options;
  options.alternatives = 2;
  for (const avf::check::CheckedJob& job : avf::check::CheckJobs(program, diags)) {
    if (!job.ok) continue;
    auto plan = avf::plan::PlanJob(job.spec, options, diags);
    if (!plan) continue;
    avf::emit::WritePlanJson(*plan, null);
    avf::emit::WritePlanTable(*plan, null);
    avf::emit::WritePlanSummaryJson(*plan, null);
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
