#include "driver/options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <CLI/CLI.hpp>

#include "diag/diagnostic.h"

#include "plan_format/launch.h"

namespace avf::driver {

namespace {

constexpr const char* kDescription =
    "aviflowc compiles .avf training-job descriptions: it checks a job against its\n"
    "cluster before anything is scheduled.\n\n"
    "  aviflowc FILE.avf [-o DIR]        compile every job: DIR/<job>/plan.json, workflow.yaml, job.yaml,\n"
    "                                    plan-configmap.yaml, rbac.yaml, monitoring.yaml (or slurm.sbatch)\n"
    "  aviflowc check FILE.avf           every check that compiling makes; write nothing\n"
    "  aviflowc plan FILE.avf            the chosen layout, predictions and the best alternatives\n"
    "  aviflowc emit KIND FILE.avf       one artifact to standard output: plan, argo, k8s, slurm, trainer,\n"
    "                                    monitoring, svg or html\n"
    "  aviflowc run FILE.avf --local     compile, then train the job here with avf-run\n"
    "  aviflowc fmt FILE.avf             print the file in the canonical layout (-i: rewrite, --check: list)\n"
    "  aviflowc lsp                      a language server for editors, on standard input and output\n"
    "  aviflowc --dump=KIND FILE.avf     print a phase's result: tokens, ast or sema\n"
    "  aviflowc explain CODE             what a diagnostic code means, with a failing and a fixed example\n\n"
    "Exit status: 0 success (warnings allowed), 1 the input has errors, 2 usage or I/O errors.";

// Spellings of the enumerated options, as the user writes them.
struct Spellings {
  std::string dump;
  std::string color = "auto";
  std::string format = "text";
  std::string plan_format = "table";
  std::string emit;
};

// Options shared by every command; CLI11 subcommands fall through to these.
void AddCommonOptions(CLI::App& app, Options& o, Spellings& s) {
  app.add_option("-I", o.include_dirs, "Add DIR to the import search path")->type_name("DIR")->allow_extra_args(false);
  app.add_option("--dump", s.dump, "Print the result of a phase: tokens, ast or sema")
      ->check(CLI::IsMember({"tokens", "ast", "sema"}))
      ->type_name("KIND");
  app.add_option("--color", s.color, "Color diagnostics: auto (default), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("WHEN");
  app.add_option("--diagnostics-format", s.format, "Diagnostics as text (default) or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT");
  app.add_flag("--verify-diagnostics", o.verify_diagnostics,
               "Check diagnostics against `// expected-error {{...}}` comments (for tests)");
  app.add_option("--error-limit", o.error_limit, "Stop after N errors (default 50; 0: no limit)")->type_name("N");
  app.add_option("--job", o.job, "Only the job named NAME (compile, check, plan, emit, run)")->type_name("NAME");
  app.add_flag("--template", o.template_workflow, "Write an Argo WorkflowTemplate instead of a Workflow");
}

// Seconds and seeds are checked by the launch contract, the same in aviflowc
// run and avf-run (CLI::Range lets `nan` through; CLI11 turns `-5` into 2^64 - 5).
auto Seconds() -> CLI::Validator {
  return CLI::Validator([](std::string& text) { return avf::plan_format::SecondsProblem(text); }, "SECONDS");
}

auto Seed() -> CLI::Validator {
  return CLI::Validator([](std::string& text) { return avf::plan_format::SeedProblem(text); }, "N");
}

// The avf-run options of `run --local`, each passed on when given.
void AddForwardedRunOptions(CLI::App& run, std::map<std::string, std::string>& given) {
  run.add_option("--seed", given["--seed"], "Seed of the parameter initialisation (default 1234)")->check(Seed());
  run.add_option("--peer-timeout", given["--peer-timeout"], "Seconds a collective waits for a silent rank (default 60)")
      ->check(Seconds());
  run.add_option("--join-timeout", given["--join-timeout"], "Seconds to wait for every rank to join (default 300)")
      ->check(Seconds());
  run.add_option("--elastic-last-call", given["--elastic-last-call"],
                 "An elastic job: seconds a round waits for more node launchers once the fewest have joined (default "
                 "30)")
      ->check(Seconds());
}

auto AddFileCommand(CLI::App& app, const char* name, const char* help) -> CLI::App* {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->fallthrough();
  return cmd;
}

auto UsageError(std::string message) -> ParsedCommandLine {
  ParsedCommandLine result;
  result.message = "aviflowc: error: " + message + "\nRun `aviflowc --help` for usage.\n";
  result.exit_code = 2;
  return result;
}

// A word the user meant as a command: letters, digits, `-` and `_`, starting
// with a letter, and no file of that name here (`myjob` may be a file).
auto LooksLikeCommand(const std::string& word) -> bool {
  bool word_like =
      !word.empty() && std::isalpha(static_cast<unsigned char>(word[0])) &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == std::string::npos;
  return word_like && !llvm::sys::fs::exists(word);
}

// The app's subcommands, wherever they are added.
auto CommandNames(CLI::App& app) -> std::vector<std::string> {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

// "the commands are `check`, `plan`, ... and `lsp`, and `aviflowc FILE.avf` compiles"
auto CommandList(CLI::App& app) -> std::string {
  std::vector<std::string> names = CommandNames(app);
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    list += (i == 0 ? "`" : i + 1 == names.size() ? " and `" : ", `") + names[i] + "`";
  }
  return "the commands are " + list + ", and `aviflowc FILE.avf` compiles";
}

// `command` written out with `file` in its place: `aviflowc check job.avf`.
auto WithFile(const std::string& command, const std::string& file, const std::string& kind = "KIND") -> std::string {
  if (command == "emit") return fmt::format("aviflowc emit {} {}", kind, file);
  if (command == "run") return fmt::format("aviflowc run {} --local", file);
  if (command == "explain") return "aviflowc explain CODE";
  if (command == "lsp") return "aviflowc lsp";
  return fmt::format("aviflowc {} {}", command, file);
}

// `aviflowc submit job.avf`: the first word names neither a command nor a
// file (a word without an extension that is not there), so it was meant as a
// command.
auto UnknownCommand(CLI::App& app, const std::string& word) -> std::optional<ParsedCommandLine> {
  if (!LooksLikeCommand(word)) return std::nullopt;
  std::string hint = diag::ClosestMatch(word, CommandNames(app));
  return UsageError(fmt::format("unknown command `{}`{}; {}", diag::ShortText(word),
                                hint.empty() ? "" : fmt::format(" (did you mean `{}`?)", hint), CommandList(app)));
}

// CLI11's messages for words out of place, said in aviflowc's terms: the
// command after the file (`aviflowc job.avf check`, `aviflowc job.avf
// submit`), another file after the file, a second code for `explain`.
auto MisplacedWord(CLI::App& app) -> std::optional<ParsedCommandLine> {
  std::vector<CLI::App*> commands = app.get_subcommands();
  const std::vector<std::string>& first = app.get_option("file")->results();
  if (!commands.empty() && commands.front()->get_name() == "explain") {
    std::vector<std::string> extra = commands.front()->remaining();
    if (extra.empty() || extra.front().starts_with("-")) return std::nullopt;
    return UsageError(fmt::format("`explain` takes one code; found `{}` and `{}`",
                                  diag::ShortText(commands.front()->get_option("code")->as<std::string>()),
                                  diag::ShortText(extra.front())));
  }
  if (first.empty()) return std::nullopt;
  const std::string& file = first.front();
  if (commands.empty()) {
    if (auto unknown = UnknownCommand(app, file)) return unknown;
    std::vector<std::string> extra = app.remaining();
    if (extra.empty() || extra.front().starts_with("-")) return std::nullopt;
    const std::string& word = extra.front();
    if (!LooksLikeCommand(word)) {
      return UsageError(fmt::format("expected one input file, found `{}` and `{}`", file, word));
    }
    std::string hint = diag::ClosestMatch(word, CommandNames(app));
    return UsageError(fmt::format("`{}` after `{}` is not a command{}; the command comes first: `{}`; {}",
                                  diag::ShortText(word), file,
                                  hint.empty() ? "" : fmt::format(" (did you mean `{}`?)", hint),
                                  WithFile(hint.empty() ? "check" : hint, file), CommandList(app)));
  }
  // `aviflowc job.avf check`: the command went without its file.
  CLI::App* command = commands.front();
  CLI::Option* own = command->get_option_no_throw(command->get_name() == "fmt" ? "files" : "file");
  if (!own || own->count() > 0) return std::nullopt;
  CLI::Option* kind = command->get_option_no_throw("kind");
  return UsageError(fmt::format(
      "the file `{}` comes before the command `{}`; the command comes first: `{}`", file, command->get_name(),
      WithFile(command->get_name(), file, kind && kind->count() > 0 ? kind->as<std::string>() : "KIND")));
}

// `aviflowc check job.avf WORD` (or WORD before the command): a second file,
// a second command, or a stray word.
auto ExtraWord(CLI::App& app, const std::string& command, const std::string& file, const std::string& word)
    -> ParsedCommandLine {
  if (!LooksLikeCommand(word))
    return UsageError(fmt::format("expected one input file, found `{}` and `{}`", file, word));
  std::vector<std::string> names = CommandNames(app);
  if (std::find(names.begin(), names.end(), word) != names.end()) {
    return UsageError(fmt::format("one command at a time: found `{}` and `{}`", command, word));
  }
  return UsageError(fmt::format(
      "unexpected `{}`: `{}` takes one file, here `{}`; options begin with `-` (`aviflowc {} --help` lists them)",
      diag::ShortText(word), command, file, command));
}

// `a` and `b` name one file: the same path once absolute and without `.` and
// `..`, or one existing file (links included).
auto SameFile(const std::string& a, const std::string& b) -> bool {
  auto normal = [](const std::string& path) {
    llvm::SmallString<256> p(path);
    llvm::sys::fs::make_absolute(p);
    llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
    return std::string(p);
  };
  return normal(a) == normal(b) || llvm::sys::fs::equivalent(a, b);
}

// `plan --svg X --html X`: the second file would silently replace the first
// (several jobs: OUT-JOB.svg and OUT-JOB.html alike); an output over the
// input would replace the source. Refused before anything runs.
auto OutputClash(const Options& o) -> std::optional<std::string> {
  std::vector<std::pair<const char*, const std::string*>> outputs;
  if (!o.svg_output.empty()) outputs.emplace_back("--svg", &o.svg_output);
  if (!o.html_output.empty()) outputs.emplace_back("--html", &o.html_output);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (o.input != "-" && SameFile(*path, o.input)) {
      return fmt::format("`{} {}` names the input file; the {} would replace it", flag, *path,
                         outputs[i].first == std::string_view("--svg") ? "picture" : "page");
    }
    for (size_t j = 0; j < i; ++j) {
      if (!SameFile(*outputs[j].second, *path)) continue;
      return fmt::format(
          "`{} {}` and `{} {}` name the same file: the page would overwrite the picture; give each "
          "its own file",
          outputs[j].first, *outputs[j].second, flag, *path);
    }
  }
  return std::nullopt;
}

void ApplySpellings(const Spellings& s, Options& o) {
  static const std::map<std::string, Dump> dumps{
      {"", Dump::None}, {"tokens", Dump::Tokens}, {"ast", Dump::Ast}, {"sema", Dump::Sema}};
  static const std::map<std::string, ColorMode> colors{
      {"auto", ColorMode::Auto}, {"always", ColorMode::Always}, {"never", ColorMode::Never}};
  o.dump = dumps.at(s.dump);
  o.color = colors.at(s.color);
  o.format = s.format == "json" ? DiagnosticsFormat::Json : DiagnosticsFormat::Text;
  o.plan_format = s.plan_format == "json" ? PlanFormat::Json : PlanFormat::Table;
  static const std::map<std::string, EmitKind> emits{{"", EmitKind::Plan},
                                                     {"plan", EmitKind::Plan},
                                                     {"argo", EmitKind::Argo},
                                                     {"k8s", EmitKind::K8s},
                                                     {"slurm", EmitKind::Slurm},
                                                     {"trainer", EmitKind::Trainer},
                                                     {"monitoring", EmitKind::Monitoring},
                                                     {"svg", EmitKind::Svg},
                                                     {"html", EmitKind::Html}};
  o.emit = emits.at(s.emit);
}

}  // namespace

auto ParseCommandLine(int argc, const char* const* argv) -> ParsedCommandLine {
  Options o;
  CLI::App app(kDescription, "aviflowc");
  app.set_version_flag("--version", std::string("aviflowc ") + AVIFLOW_VERSION);
  Spellings spellings;
  AddCommonOptions(app, o, spellings);
  std::string top_file;
  app.add_option("file", top_file, "The .avf file")->type_name("FILE.avf");
  CLI::Option* output =
      app.add_option("-o,--output", o.output_dir, "Write each job's artifacts to DIR/<job>/ (default: .)")
          ->type_name("DIR");
  CLI::App* check = AddFileCommand(app, "check", "Check FILE.avf as compiling would; write nothing");
  check->add_option("file", o.input, "The .avf file")->required()->type_name("FILE.avf");
  CLI::App* plan = AddFileCommand(app, "plan", "Print each job's layout, predicted memory/time/MFU and alternatives");
  plan->add_option("file", o.input, "The .avf file")->required()->type_name("FILE.avf");
  plan->add_option("--top", o.top, "Show the N best alternative layouts (default 5)")
      ->check(CLI::Range(0, 1000000))
      ->type_name("N");
  plan->add_flag("--legend", o.legend, "Explain each column of the table");
  plan->add_option("--format", spellings.plan_format, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->type_name("FORMAT");
  CLI::Option* svg =
      plan->add_option(
              "--svg", o.svg_output,
              "Also write the plan's picture to OUT.svg (several jobs: OUT-JOB.svg each; docs/cli.md#pictures)")
          ->type_name("OUT.svg");
  CLI::Option* html =
      plan->add_option(
              "--html", o.html_output,
              "Also write a page with the picture and the alternatives to OUT.html (several jobs: OUT-JOB.html)")
          ->type_name("OUT.html");
  CLI::App* emit = AddFileCommand(app, "emit", "Write one artifact of one job to standard output");
  emit->add_option("kind", spellings.emit,
                   "argo, k8s, plan, slurm, trainer (the trainer's own configuration), monitoring (the PodMonitor "
                   "and alerts), svg (the plan's picture) or html (the picture and the alternatives in one page)")
      ->required()
      ->check(CLI::IsMember({"argo", "k8s", "plan", "slurm", "trainer", "monitoring", "svg", "html"}))
      ->type_name("KIND");
  emit->add_option("file", o.input, "The .avf file")->required()->type_name("FILE.avf");
  CLI::App* run = AddFileCommand(app, "run", "Compile FILE.avf, then execute its plan on this machine (--local)");
  run->add_option("file", o.input, "The .avf file")->required()->type_name("FILE.avf");
  bool local = false;
  run->add_flag("--local", local,
                "Run the plan's ranks as processes on this machine (avf-run --device auto: its GPUs, else the CPU)");
  run->add_option("--ranks", o.ranks, "Check that the plan has N ranks (default: the plan's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->type_name("N");
  run->add_option("--nodes", o.nodes,
                  "Start N local nodes: an elastic job's count other than its own trains with that count's layout "
                  "(default: the plan's nodes)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->type_name("N");
  run->add_option("--run-dir", o.run_dir, "Folder for plan.json, metrics.jsonl and the log (default: runs/JOB)")
      ->type_name("DIR");
  run->add_option("--max-steps", o.max_steps, "Stop after N steps (default: the job's length)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->type_name("N");
  run->add_option("--checkpoint-key-file", o.checkpoint_key_file,
                  "The key of a job with `checkpoint { encrypt = secret(...) }`: 32 raw bytes or 64 hex digits, as "
                  "`openssl rand -hex 32` writes it")
      ->type_name("FILE");
  run->add_option("--metrics-port", o.metrics_port,
                  "Rank R serves Prometheus metrics at http://127.0.0.1:PORT+R/metrics (default: none)")
      ->check(CLI::Range(1, 65535))
      ->type_name("PORT");
  std::map<std::string, std::string> forwarded;
  AddForwardedRunOptions(*run, forwarded);
  CLI::App* fmt = app.add_subcommand(
      "fmt",
      "Print FILE.avf in the canonical layout (docs/cli.md#fmt); -i rewrites the files, --check lists those "
      "that would change");
  fmt->add_option("files", o.format_files, "The .avf files")->required()->type_name("FILE.avf...");
  fmt->add_flag("-i,--in-place", o.format_in_place, "Rewrite each file in place (atomically) instead of printing it");
  fmt->add_flag("--check", o.format_check,
                "Change nothing; list the files that are not in canonical form, exit 1 if any");
  CLI::App* explain = app.add_subcommand(
      "explain", "Explain a diagnostic code (`aviflowc explain E0501`); without one, or with --list, list every code");
  CLI::Option* explain_code =
      explain->add_option("code", o.explain_code, "A code as in `[E0501]`, any case")->type_name("CODE");
  explain->add_flag("--list", o.explain_list, "List every code with its title");
  CLI::App* lsp = app.add_subcommand(
      "lsp", "Serve the Language Server Protocol on standard input and output, for editors (docs/editors.md)");
  lsp->fallthrough();
  app.require_subcommand(0, 1);

  ParsedCommandLine result;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    result.message = app.help();
    return result;
  } catch (const CLI::CallForVersion&) {
    result.message = std::string("aviflowc ") + AVIFLOW_VERSION + "\n";
    return result;
  } catch (const CLI::ParseError& e) {
    if (auto misplaced = MisplacedWord(app)) return *misplaced;
    result.message = std::string("aviflowc: error: ") + e.what() + "\nRun `aviflowc --help` for usage.\n";
    result.exit_code = 2;
    return result;
  }
  ApplySpellings(spellings, o);
  for (const auto& [flag, value] : forwarded) {
    if (!value.empty()) o.forwarded.emplace_back(flag, value);
  }
  if (fmt->parsed()) {
    if (o.format_in_place && o.format_check) return UsageError("`fmt`: `-i` and `--check` exclude each other");
    if (!o.format_in_place && !o.format_check && o.format_files.size() > 1) {
      return UsageError("`fmt` prints one file; give `-i` or `--check` for several");
    }
    if (!top_file.empty()) return UsageError("`fmt` takes its files after it");
    o.command = Command::Format;
    result.options = std::move(o);
    return result;
  }
  if (explain->parsed()) {
    if (!top_file.empty()) return UsageError("`explain` takes its code after it");
    if (o.explain_list && explain_code->count() > 0) return UsageError("`explain`: give a code or `--list`, not both");
    if (explain_code->count() > 0 && o.explain_code.empty()) return UsageError("`explain`: the code is empty");
    o.command = Command::Explain;
    result.options = std::move(o);
    return result;
  }
  if (lsp->parsed()) {
    if (!top_file.empty()) return UsageError("`lsp` takes no file; the editor sends the documents it opens");
    o.command = Command::Lsp;
    result.options = std::move(o);
    return result;
  }
  for (CLI::Option* picture : {svg, html}) {
    if (picture->count() > 0 && picture->as<std::string>().empty()) {
      return UsageError(fmt::format("`{}` needs a file name", picture->get_name()));
    }
  }
  if (run->parsed() && !local) {
    return UsageError(
        "`aviflowc run` executes a job on this machine and needs `--local`; for a cluster, "
        "apply the manifests of `aviflowc FILE.avf -o DIR` (docs/deploy.md)");
  }
  if (check->parsed() || plan->parsed() || emit->parsed() || run->parsed()) {
    o.command = check->parsed()  ? Command::Check
                : plan->parsed() ? Command::Plan
                : run->parsed()  ? Command::Run
                                 : Command::Emit;
    if (!top_file.empty()) return ExtraWord(app, app.get_subcommands().front()->get_name(), o.input, top_file);
    if (output->count() > 0)
      return UsageError(
          "`-o` names the output folder of `aviflowc FILE.avf -o DIR`; `check`, `plan` and `emit` write no files");
    if (o.template_workflow && !(o.command == Command::Emit && o.emit == EmitKind::Argo)) {
      return UsageError("`--template` applies to `aviflowc FILE.avf` and `emit argo`");
    }
  } else {
    if (auto unknown = UnknownCommand(app, top_file)) return *unknown;
    o.input = top_file;
  }
  if (o.input.empty()) return UsageError("no input file");
  if (o.output_dir.empty()) return UsageError("`-o` needs a folder");
  if (auto clash = OutputClash(o)) return UsageError(*clash);
  result.options = std::move(o);
  return result;
}

}  // namespace avf::driver
