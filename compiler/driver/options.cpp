#include "driver/options.h"

#include <map>

#include <CLI/CLI.hpp>

namespace avf::driver {

namespace {

constexpr const char* kDescription =
    "aviflowc compiles .avf training-job descriptions: it checks a job against its\n"
    "cluster before anything is scheduled.\n\n"
    "  aviflowc check FILE.avf           parse and check, write nothing\n"
    "  aviflowc --dump=KIND FILE.avf     print a phase's result: tokens, ast or sema\n\n"
    "Exit status: 0 success (warnings allowed), 1 the input has errors, 2 usage or I/O errors.";

// Spellings of the enumerated options, as the user writes them.
struct Spellings {
  std::string dump;
  std::string color = "auto";
  std::string format = "text";
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
}

void ApplySpellings(const Spellings& s, Options& o) {
  static const std::map<std::string, Dump> dumps{
      {"", Dump::None}, {"tokens", Dump::Tokens}, {"ast", Dump::Ast}, {"sema", Dump::Sema}};
  static const std::map<std::string, ColorMode> colors{
      {"auto", ColorMode::Auto}, {"always", ColorMode::Always}, {"never", ColorMode::Never}};
  o.dump = dumps.at(s.dump);
  o.color = colors.at(s.color);
  o.format = s.format == "json" ? DiagnosticsFormat::Json : DiagnosticsFormat::Text;
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
  CLI::App* check = app.add_subcommand("check", "Parse and check FILE.avf; write nothing");
  check->fallthrough();
  check->add_option("file", o.input, "The .avf file")->required()->type_name("FILE.avf");
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
    result.message = std::string("aviflowc: error: ") + e.what() + "\nRun `aviflowc --help` for usage.\n";
    result.exit_code = 2;
    return result;
  }
  ApplySpellings(spellings, o);
  if (check->parsed()) {
    o.command = Command::Check;
    if (!top_file.empty()) {
      result.message = "aviflowc: error: expected one input file, found `" + o.input + "` and `" + top_file +
                       "`\nRun `aviflowc --help` for usage.\n";
      result.exit_code = 2;
      return result;
    }
  } else {
    o.input = top_file;
  }
  if (o.input.empty()) {
    result.message = "aviflowc: error: no input file\nRun `aviflowc --help` for usage.\n";
    result.exit_code = 2;
    return result;
  }
  if (o.command == Command::Compile && o.dump == Dump::None) {
    result.message =
        "aviflowc: error: writing a job's outputs (plan.json, manifests) is not available in this\n"
        "version; use `aviflowc check " + o.input + "`\n";
    result.exit_code = 2;
    return result;
  }
  result.options = std::move(o);
  return result;
}

}  // namespace avf::driver
