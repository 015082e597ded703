// aviflowc: runs the phases in order and renders their diagnostics.
//   source -> lex -> parse -> imports -> sema -> check -> plan -> emit
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/InitLLVM.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/raw_ostream.h>

#include "ast/dump.h"
#include "diag/render.h"
#include "diag/verify.h"
#include "driver/backend.h"
#include "driver/format_files.h"
#include "driver/options.h"
#include "explain/explain.h"
#include "imports/imports.h"
#include "lex/lex.h"
#include "lsp/server.h"
#include "sema/dump.h"
#include "sema/sema.h"

namespace avf::driver {

namespace {

auto UseColor(ColorMode mode) -> bool {
  switch (mode) {
    case ColorMode::Always: return true;
    case ColorMode::Never: return false;
    case ColorMode::Auto: return llvm::sys::Process::StandardErrHasColors();
  }
  return false;
}

// Prints the diagnostics (or verifies them) and returns the exit status.
auto Finish(const Options& o, const source::SourceSet& sources, const diag::DiagnosticEngine& diags) -> int {
  if (o.verify_diagnostics) return diag::VerifyDiagnostics(sources.mgr(), diags, llvm::errs()) ? 0 : 1;
  if (o.format == DiagnosticsFormat::Json) {
    diag::RenderJson(sources.mgr(), diags, llvm::errs());
  } else {
    bool color = UseColor(o.color);
    if (color) llvm::errs().enable_colors(true);
    diag::RenderText(sources.mgr(), diags, llvm::errs(), color);
  }
  if (diags.has_io_errors()) return 2;
  return diags.has_errors() ? 1 : 0;
}

// Where `std/NAME` resolves: beside this executable (installed or in the build tree).
auto StdlibDirs(const char* argv0) -> std::vector<std::string> {
  return imports::DefaultStdlibDirs(llvm::sys::fs::getMainExecutable(argv0, reinterpret_cast<void*>(&StdlibDirs)));
}

auto Run(const Options& o, const char* argv0) -> int {
  if (o.command == Command::Explain) {
    if (o.explain_list || o.explain_code.empty()) {
      explain::ListCodes(llvm::outs());
      return 0;
    }
    return explain::Explain(o.explain_code, llvm::outs(), llvm::errs());
  }
  if (o.command == Command::Format) {
    return FormatFiles(o, [&](const source::SourceSet& s, const diag::DiagnosticEngine& d) { return Finish(o, s, d); });
  }
  if (o.command == Command::Lsp) return lsp::Serve(0, 1, {{o.include_dirs, StdlibDirs(argv0)}, AVIFLOW_VERSION});
  source::SourceSet sources;
  diag::DiagnosticEngine diags;
  diags.set_error_limit(o.verify_diagnostics ? 0 : o.error_limit);
  imports::SearchPaths paths;
  paths.include_dirs = o.include_dirs;
  paths.stdlib_dirs = StdlibDirs(argv0);
  imports::ModuleSet modules = imports::LoadModules(o.input, paths, sources, diags);
  if (!modules.main_loaded) return Finish(o, sources, diags);
  const imports::Module& main = modules.modules.front();
  llvm::raw_ostream& out = llvm::outs();
  if (o.dump == Dump::Tokens) {
    diag::DiagnosticEngine reported_already;  // while loading the modules
    lex::DumpTokens(sources, lex::Lex(sources, main.buffer_id, reported_already), out);
  }
  if (o.dump == Dump::Ast) ast::DumpAst(sources.mgr(), main.ast, out);
  if (main.ast.decls.empty() && main.ast.imports.empty() && !diags.has_errors()) {
    diags.Report(diag::DiagId::EmptyFile, {}, o.input);
  }
  if (!diags.has_errors()) {
    sema::Program program = sema::Analyze(modules, diags);
    if (o.dump == Dump::Sema) sema::DumpProgram(sources.mgr(), program, main.buffer_id, out);
    bool dump_only = o.command == Command::Compile && o.dump != Dump::None;
    if (!diags.has_errors() && !dump_only) {
      BackEndResult r = RunBackEnd(o, sources, program, main.buffer_id, diags, out);
      if (r.usage_error) {
        out.flush();
        llvm::errs() << "aviflowc: error: " << r.message << "\nRun `aviflowc --help` for usage.\n";
        return r.usage_error;
      }
      // A local run's own messages came from avf-run; its status is the run's.
      if (r.run_status >= 0) {
        int status = Finish(o, sources, diags);
        return status != 0 ? status : r.run_status;
      }
    }
  }
  out.flush();
  return Finish(o, sources, diags);
}

}  // namespace

}  // namespace avf::driver

auto main(int argc, char** argv) -> int {
  llvm::InitLLVM init(argc, argv);
  avf::sema::UseOneMallocArena();
  avf::driver::ParsedCommandLine parsed = avf::driver::ParseCommandLine(argc, argv);
  if (!parsed.options) {
    (parsed.exit_code == 0 ? llvm::outs() : llvm::errs()) << parsed.message;
    return parsed.exit_code;
  }
  return avf::driver::Run(*parsed.options, argv[0]);
}
