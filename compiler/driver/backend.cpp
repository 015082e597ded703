#include "driver/backend.h"

#include "check/check.h"
#include "driver/local_run.h"
#include "driver/outputs.h"
#include "emit/plan_html.h"
#include "emit/plan_json.h"
#include "emit/plan_report.h"
#include "emit/plan_svg.h"
#include "plan/planner.h"

namespace avf::driver {

namespace {

auto Usage(std::string message) -> BackEndResult { return {2, std::move(message)}; }

// The main file's jobs, or the one --job names.
auto SelectJobs(const Options& o, const std::vector<check::CheckedJob>& all, unsigned main_buffer,
                std::vector<const check::CheckedJob*>& selected) -> BackEndResult {
  std::vector<std::string> names;
  for (const check::CheckedJob& job : all) {
    if (job.buffer_id != main_buffer) continue;
    names.push_back(job.spec.name);
    if (o.job.empty() || job.spec.name == o.job) selected.push_back(&job);
  }
  if (!o.job.empty() && selected.empty()) {
    std::string hint = diag::ClosestMatch(o.job, names);
    return Usage(fmt::format("`{}` declares no job named `{}`{}", o.input, diag::ShortText(o.job),
                             hint.empty() ? "" : fmt::format("; did you mean `{}`?", hint)));
  }
  if (o.command != Command::Check && names.empty()) return Usage(fmt::format("`{}` declares no job", o.input));
  if ((o.command == Command::Emit || o.command == Command::Run) && selected.size() > 1) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "`" : ", `") + n + "`";
    return Usage(fmt::format("`{}` declares {} jobs ({}); choose one with --job", o.input, names.size(), list));
  }
  return {};
}

}  // namespace

auto RunBackEnd(const Options& o, const source::SourceSet& sources, const sema::Program& program, unsigned main_buffer,
                diag::DiagnosticEngine& diags, llvm::raw_ostream& out) -> BackEndResult {
  std::vector<check::CheckedJob> jobs =
      check::CheckJobs(program, diags, o.command == Command::Check ? "" : o.job, o.command == Command::Run);
  std::vector<const check::CheckedJob*> selected;
  if (BackEndResult r = SelectJobs(o, jobs, main_buffer, selected); r.usage_error) return r;
  // A picture shows the ranks and the alternatives: `emit svg` draws what
  // `plan --svg` does.
  bool pictures = (o.command == Command::Plan && (!o.svg_output.empty() || !o.html_output.empty())) ||
                  (o.command == Command::Emit && (o.emit == EmitKind::Svg || o.emit == EmitKind::Html));
  plan::PlanOptions options;
  options.alternatives = o.command == Command::Plan || pictures ? o.top : 0;
  // plan.json's tables: written by compile and emit, read by avf-run, and
  // measured by `check` and `plan` as compiling would (E0907).
  options.tables = true;
  options.whole_space = o.command == Command::Plan || pictures;
  std::vector<plan::Plan> plans;
  for (const check::CheckedJob* job : selected) {
    if (!job->ok) continue;
    if (auto p = plan::PlanJob(job->spec, options, diags)) plans.push_back(std::move(*p));
  }
  bool writes = o.command == Command::Emit || o.command == Command::Compile || o.command == Command::Run;
  if (writes && diags.has_errors()) return {};
  std::string hash = sources.ContentSha256();
  for (plan::Plan& p : plans) p.source_sha256 = hash;
  // `check` is compiling without writing; `plan` reports the same. As
  // compiling does, a file with errors is not lowered: a job that failed its
  // checks would only add errors that follow from them.
  bool lowers = o.command == Command::Check || o.command == Command::Plan;
  if (lowers && !diags.has_errors()) LowerArtifacts(o, plans, diags);
  if (o.command == Command::Check) return {};
  if (o.command == Command::Run) {
    BackEndResult r;
    if (!plans.empty()) r.run_status = RunLocal(o, plans.front(), diags);
    return r;
  }
  if (o.command == Command::Emit && pictures) {
    for (const plan::Plan& p : plans) out << (o.emit == EmitKind::Svg ? emit::PlanSvg(p) : emit::PlanHtml(p));
    return {};
  }
  if (o.command == Command::Compile || (o.command == Command::Emit && o.emit != EmitKind::Plan)) {
    WriteArtifacts(o, plans, diags, out);
    return {};
  }
  if (pictures) WritePictures(o, plans, selected.size() > 1, diags);
  for (size_t i = 0; i < plans.size(); ++i) {
    if (o.command == Command::Emit) emit::WritePlanJson(plans[i], out);
    else if (o.plan_format == PlanFormat::Json) emit::WritePlanSummaryJson(plans[i], out);
    else {
      if (i > 0) out << "\n";
      emit::WritePlanTable(plans[i], o.legend, out);
    }
  }
  return {};
}

}  // namespace avf::driver
