// The command line (docs/cli.md), parsed with CLI11. Parsing never exits: the
// result says whether to run, or to stop with a message and status.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diag/diagnostic.h"

namespace avf::driver {

enum class Command { Check, Plan, Emit, Compile, Run, Format, Explain, Lsp };
enum class PlanFormat { Table, Json };
enum class EmitKind { Plan, Argo, K8s, Slurm, Trainer, Monitoring, Svg, Html };
enum class Dump { None, Tokens, Ast, Sema };
enum class ColorMode { Auto, Always, Never };
enum class DiagnosticsFormat { Text, Json };

struct Options {
  Command command = Command::Compile;
  std::string input;
  std::vector<std::string> include_dirs;
  Dump dump = Dump::None;
  ColorMode color = ColorMode::Auto;
  DiagnosticsFormat format = DiagnosticsFormat::Text;
  bool verify_diagnostics = false;
  size_t error_limit = diag::DiagnosticEngine::kDefaultErrorLimit;
  std::string job;      // --job: only this job (plan, emit)
  size_t top = 5;       // plan --top: alternatives shown
  bool legend = false;  // plan --legend: what each column of the table means
  PlanFormat plan_format = PlanFormat::Table;
  // plan --svg / --html: where each job's picture goes (docs/cli.md#pictures); empty: none.
  std::string svg_output, html_output;
  EmitKind emit = EmitKind::Plan;
  std::string output_dir = ".";    // -o: where `aviflowc FILE.avf` writes DIR/<job>/
  bool template_workflow = false;  // --template: a WorkflowTemplate instead of a Workflow
  // `run --local`: where plan.json and the metrics go, how many ranks, and a step limit.
  std::string run_dir;
  int64_t ranks = 0;      // 0: the plan's
  int64_t nodes = 0;      // 0: the plan's; an elastic job's other counts
  int64_t max_steps = 0;  // 0: the plan's
  // `run --local --checkpoint-key-file`: the key of a job whose checkpoints
  // are encrypted (a local run reads no Kubernetes Secret); passed to avf-run.
  std::string checkpoint_key_file;
  // `run --local --metrics-port P`: rank r serves Prometheus metrics on
  // 127.0.0.1:P+r (each node launcher gets its first rank's port); 0: none.
  int metrics_port = 0;
  // `run --local` options passed on to avf-run as given, once checked:
  // {"--seed", "7"}, {"--peer-timeout", "30"}, {"--join-timeout", "60"}.
  std::vector<std::pair<std::string, std::string>> forwarded;
  // `fmt FILE...`: print the canonical form, or rewrite the files in place
  // (-i), or list those that are not canonical (--check).
  std::vector<std::string> format_files;
  bool format_in_place = false, format_check = false;
  // `explain CODE`: the code's long explanation; no code or --list: every code.
  std::string explain_code;
  bool explain_list = false;
};

// Either options to run with, or text to print and the exit status.
struct ParsedCommandLine {
  std::optional<Options> options;
  std::string message;  // --help / --version text, or a usage error
  int exit_code = 0;
};

auto ParseCommandLine(int argc, const char* const* argv) -> ParsedCommandLine;

}  // namespace avf::driver
