#include "run/checkpoint_command.h"

#include <optional>

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

#include "checkpoint/store.h"
#include "parallel/runnable.h"
#include "plan/plan.h"
#include "train/checkpoint_tools.h"

namespace avf::run {

namespace {

auto Report(llvm::Error e) -> int {
  llvm::errs() << "avf-run: error: " << llvm::toString(std::move(e)) << "\n";
  return 1;
}

// What every command starts from: the step directory meant, its index
// verified, and the key of --key-file when given.
struct Opened {
  std::string step;
  checkpoint::Index index;
  std::optional<crypto::Key> key;
  auto key_or_null() const -> const crypto::Key* { return key ? &*key : nullptr; }
};

auto Open(const CheckpointFlags& f) -> llvm::Expected<Opened> {
  llvm::Expected<std::string> step = train::StepDirectoryOf(f.dir);
  if (!step) return step.takeError();
  llvm::Expected<checkpoint::Index> index = train::VerifiedIndex(*step);
  if (!index) return index.takeError();
  Opened opened{*step, std::move(*index), std::nullopt};
  if (!f.key_file.empty()) {
    llvm::Expected<crypto::Key> key = crypto::ReadKeyFile(f.key_file);
    if (!key) return key.takeError();
    opened.key.emplace(std::move(*key));
  }
  return opened;
}

auto Verify(const Opened& c) -> int {
  uint64_t bytes = 0;
  for (const checkpoint::DataFile& f : c.index.files) bytes += f.bytes;
  llvm::outs() << fmt::format("{}: step {} verifies: index.json and {} files ({} bytes) match their SHA-256\n", c.step,
                              c.index.step, c.index.files.size(), bytes);
  return 0;
}

auto Convert(const Opened& c, const CheckpointFlags& f) -> int {
  auto file = runtime::ReadPlanFileWithSha256(f.plan);
  if (!file) return Report(file.takeError());
  auto runnable = parallel::CheckRunnable(file->plan, static_cast<int>(file->plan->ranks.size()));
  if (!runnable) return Report(runnable.takeError());
  if (llvm::Error e = train::Convert(c.step, c.index, **runnable, file->sha256, f.output, c.key_or_null())) {
    return Report(std::move(e));
  }
  llvm::outs() << fmt::format("wrote {} for the {} ranks of {}\n", checkpoint::StepDir(f.output, c.index.step),
                              (*runnable)->ranks.size(), f.plan);
  return 0;
}

auto Export(const Opened& c, const CheckpointFlags& f) -> int {
  if (llvm::Error e = train::ExportSafetensors(c.step, c.index, f.output, f.dtype == "bf16", c.key_or_null())) {
    return Report(std::move(e));
  }
  llvm::outs() << fmt::format("wrote {}/config.json and {}/model.safetensors ({}, step {})\n", f.output, f.output,
                              f.dtype, c.index.step);
  return 0;
}

auto Eval(const Opened& c, const CheckpointFlags& f) -> int {
  int64_t windows = 0;
  llvm::Expected<double> loss = train::Evaluate(c.step, c.index, f.data, c.key_or_null(), windows);
  if (!loss) return Report(loss.takeError());
  llvm::outs() << fmt::format("{}: loss {:.6f} over {} windows of {} tokens of {}\n", c.step, *loss, windows,
                              c.index.origin.model.seq_len + 1, f.data);
  return 0;
}

}  // namespace

auto AddCheckpointCommands(CLI::App& app, CheckpointFlags& f) -> CLI::App* {
  CLI::App* checkpoint = app.add_subcommand("checkpoint", "Inspect, verify, convert, export or evaluate a checkpoint");
  checkpoint->require_subcommand(1);
  const char* dir_help = "A step directory (step_NNNNNNNN) or a checkpoint directory (its newest committed step)";
  CLI::App* inspect = checkpoint->add_subcommand("inspect",
                                                 "Print a checkpoint's step, job, model, plan, data "
                                                 "position and size, after verifying it");
  inspect->add_option("dir", f.dir, dir_help)->required();
  inspect->add_flag("--tensors", f.tensors, "Also list every tensor with its shape and chunks");
  CLI::App* verify = checkpoint->add_subcommand(
      "verify", "Check a checkpoint's index and every file's SHA-256; exit 0 when it verifies, 1 otherwise");
  verify->add_option("dir", f.dir, dir_help)->required();
  CLI::App* convert = checkpoint->add_subcommand("convert",
                                                 "Rewrite a checkpoint as another plan's ranks would "
                                                 "have written it");
  convert->add_option("dir", f.dir, dir_help)->required();
  convert->add_option("--plan", f.plan, "The plan.json of the layout to write")->required();
  convert->add_option("-o,--output", f.output, "Checkpoint directory to write step_NNNNNNNN into")->required();
  const char* key_help = "The key of an encrypted checkpoint (and of the files written)";
  convert->add_option("--key-file", f.key_file, key_help)->type_name("FILE");
  CLI::App* exporter = checkpoint->add_subcommand(
      "export", "Write the model as Hugging Face transformers files (config.json, model.safetensors)");
  exporter->add_option("dir", f.dir, dir_help)->required();
  exporter->add_option("--format", f.format, "safetensors (the only format)")->check(CLI::IsMember({"safetensors"}));
  exporter->add_option("--dtype", f.dtype, "fp32 (default) or bf16")->check(CLI::IsMember({"fp32", "bf16"}));
  exporter->add_option("-o,--output", f.output, "Folder to write")->required();
  exporter->add_option("--key-file", f.key_file, key_help)->type_name("FILE");
  CLI::App* eval = checkpoint->add_subcommand(
      "eval", "Mean loss over the non-overlapping windows of seq_len + 1 tokens of held-out data");
  eval->add_option("dir", f.dir, dir_help)->required();
  eval->add_option("--data", f.data, "A shard file or a folder of shard files")->required();
  eval->add_option("--key-file", f.key_file, key_help)->type_name("FILE");
  return checkpoint;
}

auto RunCheckpointCommand(const CLI::App& command, const CheckpointFlags& f) -> int {
  llvm::Expected<Opened> opened = Open(f);
  if (!opened) return Report(opened.takeError());
  if (command.got_subcommand("inspect")) {
    train::PrintInspection(opened->step, opened->index, f.tensors, llvm::outs());
    return 0;
  }
  if (command.got_subcommand("verify")) return Verify(*opened);
  if (command.got_subcommand("convert")) return Convert(*opened, f);
  if (command.got_subcommand("export")) return Export(*opened, f);
  return Eval(*opened, f);
}

}  // namespace avf::run
