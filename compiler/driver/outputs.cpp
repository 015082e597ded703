#include "driver/outputs.h"

#include <string>
#include <utility>

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include "emit/lower_plans.h"
#include "emit/manifests.h"
#include "emit/plan_html.h"
#include "emit/plan_svg.h"
#include "emit/trainer_config.h"

namespace avf::driver {

namespace {

auto SourceName(const std::string& input) -> std::string {
  if (input == "-") return "<stdin>";
  return llvm::sys::path::filename(input).str();
}

// The artifact an `emit` command asks for, whatever the job's target: a
// Slurm job's Kubernetes object is a PyTorchJob. A trainer's configuration
// names the folders of the job's own target, and the alerts' runbooks its
// logs.
auto TargetFor(const Options& o, const check::JobSpec& job) -> std::optional<deploy::Target> {
  if (o.command != Command::Emit) return std::nullopt;
  if (o.emit == EmitKind::Slurm) return deploy::Target::Slurm;
  if (o.emit == EmitKind::Trainer || o.emit == EmitKind::Monitoring)
    return job.target.value_or(deploy::Target::Kubeflow);
  return job.target == deploy::Target::JobSet ? deploy::Target::JobSet : deploy::Target::Kubeflow;
}

void AddFiles(const Options& o, const deploy::Deployment& d, std::vector<OutputFile>& files) {
  std::string dir = (llvm::Twine(o.output_dir) + "/" + d.job).str();
  auto add = [&](const char* name, std::string text) { files.push_back({dir + "/" + name, std::move(text)}); };
  add("plan.json", d.plan_json);
  if (d.target == deploy::Target::Slurm && !d.trainer_config_name.empty()) {
    add(d.trainer_config_name.c_str(), d.trainer_config);
    for (const auto& [name, text] : d.trainer_files) add(name.c_str(), text);
  }
  if (d.target == deploy::Target::Slurm) {
    add("slurm.sbatch", emit::SlurmScript(d));
    return;
  }
  add("workflow.yaml", emit::WorkflowYaml(d, o.template_workflow));
  add("job.yaml", emit::JobYaml(d));
  add("plan-configmap.yaml", emit::PlanConfigMapYaml(d));
  add("rbac.yaml", emit::RbacYaml(d));
  if (d.monitoring) add("monitoring.yaml", emit::MonitoringYaml(d));
}

auto EmitOne(const Options& o, const plan::Plan& plan, const deploy::Deployment& d, diag::DiagnosticEngine& diags)
    -> std::string {
  switch (o.emit) {
    case EmitKind::Trainer:
      if (plan.job.trainer.kind == check::TrainerKind::Avf) {
        diags.Report(diag::DiagId::NoTrainerConfig, plan.job.name_range, plan.job.name)
            .Help(
                "`aviflowc emit plan` writes what avf-run reads; `trainer { kind = torchtitan; }` or "
                "`megatron` makes the pods run another trainer");
        return "";
      }
      return emit::TrainerConfigText(plan, d.trainer_paths);
    case EmitKind::Monitoring:
      if (!d.monitoring) {
        diags
            .Report(diag::DiagId::NoMonitoring, plan.job.trainer.kind_range, plan.job.name, Name(plan.job.trainer.kind))
            .Help("the PodMonitor and the alerts read avf-run's metrics; watch another trainer with its own exporter");
        return "";
      }
      return emit::MonitoringYaml(d);
    case EmitKind::Argo: return emit::WorkflowYaml(d, o.template_workflow);
    case EmitKind::K8s: return emit::JobYaml(d);
    case EmitKind::Slurm: return emit::SlurmScript(d);
    case EmitKind::Plan: return d.plan_json;
    case EmitKind::Svg:  // drawn from the plan, before lowering (RunBackEnd)
    case EmitKind::Html: return "";
  }
  return "";
}

// The folders `path` needs that do not exist yet, outermost first.
auto MissingFolders(const std::string& path) -> std::vector<std::string> {
  std::vector<std::string> missing;
  for (llvm::StringRef dir = llvm::sys::path::parent_path(path); !dir.empty() && !llvm::sys::fs::exists(dir);
       dir = llvm::sys::path::parent_path(dir)) {
    missing.insert(missing.begin(), dir.str());
  }
  return missing;
}

// Writes `a` to its temporary name; false after a diagnostic.
auto WriteTemporary(const OutputFile& a, std::vector<std::string>& created, diag::DiagnosticEngine& diags) -> bool {
  for (const std::string& dir : MissingFolders(a.path)) {
    if (std::error_code ec = llvm::sys::fs::create_directory(dir)) {
      diags.Report(diag::DiagId::CannotWriteOutput, {}, dir, ec.message());
      return false;
    }
    created.push_back(dir);
  }
  if (llvm::sys::fs::is_directory(a.path)) {
    diags.Report(diag::DiagId::CannotWriteOutput, {}, a.path, "a folder is in the way");
    return false;
  }
  std::error_code ec;
  llvm::raw_fd_ostream file(a.path + ".tmp", ec);
  if (!ec) {
    file << a.text;
    file.close();
    if (file.has_error()) ec = file.error();
    file.clear_error();
  }
  if (!ec) return true;
  diags.Report(diag::DiagId::CannotWriteOutput, {}, a.path, ec.message());
  return false;
}

}  // namespace

auto WriteOutputFiles(const std::vector<OutputFile>& files, diag::DiagnosticEngine& diags) -> bool {
  std::vector<std::string> created;
  size_t written = 0;
  while (written < files.size() && WriteTemporary(files[written], created, diags)) ++written;
  if (written < files.size()) {
    for (size_t i = 0; i <= written && i < files.size(); ++i) llvm::sys::fs::remove(files[i].path + ".tmp");
    for (auto dir = created.rbegin(); dir != created.rend(); ++dir) llvm::sys::fs::remove(*dir);
    return false;
  }
  bool ok = true;
  for (const OutputFile& a : files) {
    if (std::error_code ec = llvm::sys::fs::rename(a.path + ".tmp", a.path)) {
      llvm::sys::fs::remove(a.path + ".tmp");
      diags.Report(diag::DiagId::CannotWriteOutput, {}, a.path, ec.message());
      ok = false;
    }
  }
  return ok;
}

auto PicturePath(const std::string& out, const std::string& job, bool several) -> std::string {
  if (!several) return out;
  llvm::StringRef extension = llvm::sys::path::extension(out);
  return (llvm::StringRef(out).drop_back(extension.size()) + "-" + job + extension).str();
}

void WritePictures(const Options& o, const std::vector<plan::Plan>& plans, bool several,
                   diag::DiagnosticEngine& diags) {
  std::vector<OutputFile> files;
  for (const plan::Plan& plan : plans) {
    if (!o.svg_output.empty())
      files.push_back({PicturePath(o.svg_output, plan.job.name, several), emit::PlanSvg(plan)});
    if (!o.html_output.empty()) {
      files.push_back({PicturePath(o.html_output, plan.job.name, several), emit::PlanHtml(plan)});
    }
  }
  WriteOutputFiles(files, diags);
}

auto LowerArtifacts(const Options& o, const std::vector<plan::Plan>& plans, diag::DiagnosticEngine& diags)
    -> Artifacts {
  Artifacts out;
  bool writes_files = o.command == Command::Compile;
  emit::LowerPlansOptions options;
  options.source_name = SourceName(o.input);
  options.local_jobs = o.command == Command::Emit ? emit::LocalJobs::Lower
                       : writes_files             ? emit::LocalJobs::Report
                                                  : emit::LocalJobs::Skip;
  options.target = [&o](const check::JobSpec& job) { return TargetFor(o, job); };
  options.writes_pods = o.command != Command::Emit || (o.emit != EmitKind::Trainer && o.emit != EmitKind::Monitoring);
  for (emit::LoweredPlan& l : emit::LowerPlans(plans, options, diags)) {
    const plan::Plan& plan = *l.plan;
    if (l.local && writes_files) {
      out.files.push_back({(llvm::Twine(o.output_dir) + "/" + plan.job.name + "/plan.json").str(), l.plan_json});
    }
    if (!l.deployment) continue;
    deploy::Deployment& d = *l.deployment;
    if (o.command == Command::Emit) {
      d.trainer_config = emit::TrainerConfigText(plan, d.trainer_paths);
      out.printed += EmitOne(o, plan, d, diags);
    } else if (writes_files) {
      d.trainer_config = emit::TrainerConfigText(plan, d.trainer_paths);
      AddFiles(o, d, out.files);
    }
  }
  return out;
}

void WriteArtifacts(const Options& o, const std::vector<plan::Plan>& plans, diag::DiagnosticEngine& diags,
                    llvm::raw_ostream& out) {
  Artifacts artifacts = LowerArtifacts(o, plans, diags);
  if (diags.has_errors()) return;
  out << artifacts.printed;
  WriteOutputFiles(artifacts.files, diags);
}

}  // namespace avf::driver
