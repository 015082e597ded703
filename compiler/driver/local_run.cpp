#include "driver/local_run.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include "emit/plan_json.h"

namespace avf::driver {

namespace {

// A `local` tier's mount is relative to the job file's folder.
auto TierPath(const Options& o, const check::Location& loc) -> std::string {
  llvm::SmallString<256> root(loc.mount);
  if (!llvm::sys::path::is_absolute(root)) {
    llvm::SmallString<256> base(o.input == "-" ? "." : llvm::sys::path::parent_path(o.input));
    if (base.empty()) base = ".";
    llvm::sys::path::append(base, loc.mount);
    root = base;
  }
  if (!loc.path.empty()) llvm::sys::path::append(root, loc.path);
  return root.str().str();
}

// avf-run beside aviflowc (build tree and install share bin/), or $AVIFLOW_AVF_RUN.
auto AvfRunPath() -> std::string {
  if (const char* env = std::getenv("AVIFLOW_AVF_RUN"); env && *env) return env;
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, reinterpret_cast<void*>(&AvfRunPath));
  llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(path, "avf-run");
  return path.str().str();
}

auto WritePlan(const std::string& dir, const plan::Plan& plan, diag::DiagnosticEngine& diags) -> std::string {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    diags.Report(diag::DiagId::CannotWriteOutput, {}, dir, ec.message());
    return "";
  }
  std::string path = dir + "/plan.json";
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (!ec) {
    emit::WritePlanJson(plan, out);
    out.close();
    if (out.has_error()) ec = out.error();
    out.clear_error();
  }
  if (ec) {
    diags.Report(diag::DiagId::CannotWriteOutput, {}, path, ec.message());
    return "";
  }
  return path;
}

}  // namespace

auto RunLocal(const Options& o, const plan::Plan& plan, diag::DiagnosticEngine& diags) -> int {
  const check::JobSpec& job = plan.job;
  const check::Location& data = job.dataset.source;
  if (data.storage_kind != "local") {
    diags.Report(diag::DiagId::RunNeedsLocalData, job.at.dataset_source, job.dataset.name, data.storage_kind,
                 data.storage)
        .Help("point the dataset at a `local` tier (`storage here { kind = local; mount = \"data\" }`) holding "
              "shards made by `avf-run tokenize`");
    return -1;
  }
  int64_t ranks = static_cast<int64_t>(plan.ranks.size());
  if (o.ranks != 0 && o.ranks != ranks) {
    diags.Report(diag::DiagId::RunRankCount, job.at.gpus, o.ranks, o.ranks, job.name, ranks)
        .Help("the plan's rank count is the job's `gpus`");
    return -1;
  }
  std::string dir = o.run_dir.empty() ? "runs/" + job.name : o.run_dir;
  std::string plan_path = WritePlan(dir, plan, diags);
  if (plan_path.empty()) return -1;
  std::vector<std::string> args{AvfRunPath(), "--plan", plan_path, "--data-dir", TierPath(o, data), "--run-dir", dir};
  if (job.checkpoint.enabled && job.checkpoint.dir && job.checkpoint.dir->storage_kind == "local") {
    args.insert(args.end(), {"--checkpoint-dir", TierPath(o, *job.checkpoint.dir)});
  }
  if (o.max_steps > 0) args.insert(args.end(), {"--max-steps", std::to_string(o.max_steps)});
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  llvm::outs().flush();
  std::string error;
  int status = llvm::sys::ExecuteAndWait(args[0], refs, llvm::None, {}, 0, 0, &error);
  if (status < 0) {
    diags.Report(diag::DiagId::CannotRunRuntime, {}, args[0], error.empty() ? "it did not start" : error);
    return -1;
  }
  return status;
}

}  // namespace avf::driver
