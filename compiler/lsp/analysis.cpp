#include "lsp/analysis.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include "check/check.h"
#include "emit/lower_plans.h"
#include "plan/planner.h"
#include "sema/sema.h"

namespace avf::lsp {

namespace {

// What `aviflowc check` runs after sema (driver/backend.cpp): every job
// checked; those of the document planned as check plans them (no
// alternatives, but the tables, whose size plan.json's limit measures, E0907);
// and, when nothing failed, lowered to their targets through the path that
// check and compiling take (emit::LowerPlans), for the E09xx diagnostics.
void CheckPlanAndLower(Analysis& a, const std::string& path, unsigned main_buffer) {
  std::vector<check::CheckedJob> jobs = check::CheckJobs(*a.program, a.diags);
  plan::PlanOptions options;
  options.alternatives = 0;
  options.whole_space = false;
  options.tables = true;
  for (const check::CheckedJob& job : jobs) {
    if (job.buffer_id != main_buffer || !job.ok) continue;
    if (auto p = plan::PlanJob(job.spec, options, a.diags)) a.plans.push_back(std::move(*p));
  }
  if (a.diags.has_errors()) return;
  std::string hash = a.sources->ContentSha256();
  for (plan::Plan& p : a.plans) p.source_sha256 = hash;
  emit::LowerPlansOptions lower;
  lower.source_name = llvm::sys::path::filename(path).str();
  emit::LowerPlans(a.plans, lower, a.diags);
}

}  // namespace

auto Analysis::FindDecl(std::string_view name) const -> std::pair<const ast::Decl*, const imports::Module*> {
  for (const imports::Module& m : modules.modules) {
    for (const ast::Decl& d : m.ast.decls) {
      if (d.name.text == name && !name.empty()) return {&d, &m};
    }
  }
  return {nullptr, nullptr};
}

// Modules load depth-first, so the import that leads to module `target` is
// the last of the document's own imports loaded at or before it.
auto Analysis::ImportLeadingTo(unsigned buffer_id, const imports::SearchPaths& paths) const -> llvm::SMRange {
  const imports::Module* document = main();
  if (!document) return {};
  const std::vector<imports::Module>& all = modules.modules;
  auto index_where = [&](auto matches) -> size_t {
    return std::find_if(all.begin(), all.end(), matches) - all.begin();
  };
  size_t target = index_where([&](const imports::Module& m) { return m.buffer_id == buffer_id; });
  llvm::SMRange leading;
  size_t leading_index = 0;
  for (const ast::Import& imp : document->ast.imports) {
    for (const std::string& candidate : imports::Candidates(imp.path, document->path, paths)) {
      if (!llvm::sys::fs::exists(candidate)) continue;
      size_t i = index_where([&](const imports::Module& m) { return m.path == candidate; });
      if (i <= target && i < all.size() && i >= leading_index) {
        leading = imp.statement;
        leading_index = i;
      }
      break;
    }
  }
  return leading;
}

auto Analyze(const std::string& path, std::string text, const imports::SearchPaths& paths)
    -> std::unique_ptr<Analysis> {
  auto a = std::make_unique<Analysis>();
  a->modules = imports::LoadModulesFromText(path, std::move(text), paths, *a->sources, a->diags);
  const imports::Module* main = a->main();
  if (!main) return a;
  if (main->ast.decls.empty() && main->ast.imports.empty() && !a->diags.has_errors()) {
    a->diags.Report(diag::DiagId::EmptyFile, {}, path);
  }
  if (a->diags.has_errors()) return a;
  a->program = sema::Analyze(a->modules, a->diags);
  if (!a->diags.has_errors()) CheckPlanAndLower(*a, path, main->buffer_id);
  return a;
}

}  // namespace avf::lsp
