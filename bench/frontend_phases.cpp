// Front-end throughput per phase on one .avf file: lexing, parsing and
// semantic analysis each timed on their own (best of N runs, in CPU time),
// with the peak RSS after each, so that the slow phase is named rather than
// guessed. bench/frontend_bench.py runs it on generated files of growing size.
//
// With --whole, the front end runs in one go instead (load, lex, parse,
// imports, sema: what `check` and the language server do before planning),
// so that the peak RSS is the front end's own and not the phases' together.
//
// With --expect-errors, the file is one being edited, with syntax errors:
// lexing and parsing are timed (parsing also by the ANTLR parser alone on the
// whole file, the reference that Parse must equal), nothing after.
//
// Usage: frontend_phases FILE.avf [--runs N] [--stdlib DIR] [--whole | --expect-errors]
// Prints figures only; exit 1 when the file does not compile cleanly through
// sema (the figures would time error paths), or with --expect-errors when it
// parses without a syntax error; 2 on bad usage.
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "imports/imports.h"
#include "lex/lex.h"
#include "parse/parse.h"
#include "sema/sema.h"

namespace {

auto PeakRssMiB() -> double {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// CPU seconds of the process (sema runs on a thread of its own): on a busy
// machine wall time would measure the other programs too.
auto CpuSeconds() -> double {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

template <typename F>
auto BestSeconds(int runs, F&& run) -> double {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    double start = CpuSeconds();
    run();
    best = std::min(best, CpuSeconds() - start);
  }
  return best;
}

void Print(const char* phase, double mb, double seconds) {
  fmt::print("{:<22} {:>9.3f} CPU s {:>9.2f} MB/s {:>10.1f} MiB peak RSS\n", phase, seconds, mb / seconds,
             PeakRssMiB());
}

}  // namespace

auto Whole(const std::string& path, const std::string& stdlib, int runs) -> int {
  bool clean = true;
  double mb = 0;
  double seconds = BestSeconds(runs, [&] {
    avf::source::SourceSet sources;
    avf::diag::DiagnosticEngine d;
    avf::imports::ModuleSet modules = avf::imports::LoadModules(path, {{}, {stdlib}}, sources, d);
    avf::sema::Program program = avf::sema::Analyze(modules, d);
    clean = !d.has_errors() && !modules.modules.empty();
    if (clean) mb = sources.Text(modules.modules.front().buffer_id).size() / 1e6;
  });
  if (!clean) return fmt::print(stderr, "frontend_phases: {} has errors\n", path), 1;
  fmt::print("{}: {:.2f} MB, best of {} runs\n", path, mb, runs);
  Print("whole front end", mb, seconds);
  fmt::print("{:<22} {:>9.1f} x the input\n", "peak RSS", PeakRssMiB() * 1048576 / (mb * 1e6));
  return 0;
}

// Parsing of a file with syntax errors, its tokens lexed.
auto WithErrors(const avf::lex::TokenizedBuffer& tokens, double mb, int runs) -> int {
  size_t errors = 0;
  Print("parse", mb, BestSeconds(runs, [&] {
          avf::diag::DiagnosticEngine d;
          avf::ast::File file = avf::parse::Parse(tokens, d);
          errors = d.error_count();
        }));
  Print("parse by ANTLR alone", mb, BestSeconds(runs, [&] {
          avf::diag::DiagnosticEngine d;
          avf::ast::File file = avf::parse::ParseByAntlr(tokens, d);
        }));
  if (errors == 0) return fmt::print(stderr, "frontend_phases: the file has no syntax error\n"), 1;
  fmt::print("{} errors reported by the parser\n", errors);
  return 0;
}

auto main(int argc, char** argv) -> int {
  avf::sema::UseOneMallocArena();  // as aviflowc does
  std::string path, stdlib = AVF_STDLIB_DIR;
  int runs = 3;
  bool whole = false, expect_errors = false;
  const char* usage = "usage: frontend_phases FILE.avf [--runs N] [--stdlib DIR] [--whole | --expect-errors]\n";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--stdlib") && i + 1 < argc) stdlib = argv[++i];
    else if (!std::strcmp(argv[i], "--whole")) whole = true;
    else if (!std::strcmp(argv[i], "--expect-errors")) expect_errors = true;
    else if (argv[i][0] != '-' && path.empty()) path = argv[i];
    else return fmt::print(stderr, "{}", usage), 2;
  }
  if (path.empty() || (whole && expect_errors)) return fmt::print(stderr, "{}", usage), 2;
  if (whole) return Whole(path, stdlib, runs);

  avf::source::SourceSet sources;
  avf::diag::DiagnosticEngine diags;
  std::optional<unsigned> id = sources.LoadFile(path, diags);
  if (!id) return fmt::print(stderr, "frontend_phases: cannot read {}\n", path), 1;
  double mb = sources.Text(*id).size() / 1e6;
  fmt::print("{}: {:.2f} MB, best of {} runs, {:.1f} MiB peak RSS with the file read\n", path, mb, runs, PeakRssMiB());

  avf::lex::TokenizedBuffer tokens(*id, "");
  Print("lex", mb, BestSeconds(runs, [&] {
          avf::diag::DiagnosticEngine d;
          tokens = avf::lex::Lex(sources, *id, d);
        }));
  if (expect_errors) return WithErrors(tokens, mb, runs);
  Print("parse", mb, BestSeconds(runs, [&] {
          avf::diag::DiagnosticEngine d;
          avf::ast::File file = avf::parse::Parse(tokens, d);
        }));
  avf::imports::ModuleSet modules;
  Print("lex+parse+imports", mb, BestSeconds(runs, [&] {
          avf::diag::DiagnosticEngine d;
          modules = avf::imports::LoadModules(path, {{}, {stdlib}}, sources, d);
        }));
  bool clean = true;
  Print("sema", mb, BestSeconds(runs, [&] {
          avf::diag::DiagnosticEngine d;
          avf::sema::Program program = avf::sema::Analyze(modules, d);
          clean = !d.has_errors();
        }));
  if (!clean) return fmt::print(stderr, "frontend_phases: {} has errors\n", path), 1;
  return 0;
}
