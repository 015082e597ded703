#include "diag/verify.h"

#include <regex>

#include "diag/render.h"

namespace avf::diag {

namespace {

struct Entry {
  std::string file;
  unsigned line = 0;
  Severity severity = Severity::Error;
  std::string text;  // expected substring, or the actual message
  bool matched = false;
};

auto SeverityWord(Severity s) -> const char* {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

struct Expectations {
  std::vector<Entry> entries;
  bool any_directive = false;
  std::vector<std::string> malformed;
};

// Scans one buffer for expected-* directives.
void ScanBuffer(const llvm::MemoryBuffer& buffer, Expectations& out) {
  static const std::regex kDirective(R"(expected-(error|warning|note)(@([+-]?)([0-9]+))?\s*\{\{(.*?)\}\})");
  static const std::regex kNoDiagnostics(R"(expected-no-diagnostics)");
  llvm::StringRef text = buffer.getBuffer();
  unsigned line_no = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++line_no;
    if (line.find("expected-") == llvm::StringRef::npos) continue;
    std::string s = line.str();
    if (std::regex_search(s, kNoDiagnostics)) out.any_directive = true;
    for (std::sregex_iterator it(s.begin(), s.end(), kDirective), end; it != end; ++it) {
      const std::smatch& m = *it;
      out.any_directive = true;
      Entry e;
      e.file = buffer.getBufferIdentifier().str();
      e.severity = m[1] == "error" ? Severity::Error : m[1] == "warning" ? Severity::Warning : Severity::Note;
      e.line = line_no;
      if (m[2].matched) {
        unsigned n = std::stoul(m[4]);
        if (m[3] == "+") e.line = line_no + n;
        else if (m[3] == "-") e.line = line_no > n ? line_no - n : 0;
        else e.line = n;
      }
      e.text = m[5];
      out.entries.push_back(std::move(e));
    }
  }
}

auto ActualEntries(const llvm::SourceMgr& sm, const DiagnosticEngine& engine) -> std::vector<Entry> {
  std::vector<Entry> actual;
  for (const Diagnostic* d : SortedForOutput(sm, engine)) {
    Position pos = PositionOf(sm, d->loc);
    std::string code(Info(d->id).code);
    actual.push_back({pos.file, pos.line, d->severity, d->message + " [" + code + "]", false});
    for (const SubDiagnostic& n : d->notes) {
      Position np = n.loc.isValid() ? PositionOf(sm, n.loc) : pos;
      actual.push_back({np.file, np.line, Severity::Note, n.message, false});
    }
  }
  return actual;
}

void MatchAll(std::vector<Entry>& expected, std::vector<Entry>& actual) {
  for (Entry& e : expected) {
    for (Entry& a : actual) {
      if (a.matched || a.severity != e.severity || a.line != e.line || a.file != e.file) continue;
      if (a.text.find(e.text) == std::string::npos) continue;
      a.matched = e.matched = true;
      break;
    }
  }
}

auto ReportUnmatched(const std::vector<Entry>& entries, Severity severity, const char* what, llvm::raw_ostream& os)
    -> size_t {
  size_t count = 0;
  for (const Entry& e : entries) {
    if (e.matched || e.severity != severity) continue;
    if (count++ == 0) os << "error: '" << SeverityWord(severity) << "' diagnostics " << what << ":\n";
    os << "  File " << e.file << " Line " << e.line << ": " << e.text << '\n';
  }
  return count;
}

}  // namespace

auto VerifyDiagnostics(const llvm::SourceMgr& sm, const DiagnosticEngine& engine, llvm::raw_ostream& os) -> bool {
  Expectations expectations;
  for (unsigned id = 1; id <= sm.getNumBuffers(); ++id) ScanBuffer(*sm.getMemoryBuffer(id), expectations);
  if (!expectations.any_directive) {
    os << "error: no expected directives found: use `// expected-error {{...}}` or "
          "`// expected-no-diagnostics`\n";
    return false;
  }
  std::vector<Entry> actual = ActualEntries(sm, engine);
  MatchAll(expectations.entries, actual);
  size_t problems = 0;
  for (Severity s : {Severity::Error, Severity::Warning, Severity::Note}) {
    problems += ReportUnmatched(expectations.entries, s, "expected but not seen", os);
    problems += ReportUnmatched(actual, s, "seen but not expected", os);
  }
  if (problems) os << problems << " error" << (problems == 1 ? "" : "s") << " generated.\n";
  os.flush();
  return problems == 0;
}

}  // namespace avf::diag
