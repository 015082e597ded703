#include <llvm/Support/JSON.h>

#include "diag/render.h"

namespace avf::diag {

namespace {

auto LocationJson(const llvm::SourceMgr& sm, llvm::SMLoc loc) -> llvm::json::Value {
  Position pos = PositionOf(sm, loc);
  if (pos.file.empty()) return nullptr;
  return llvm::json::Object{{"file", pos.file}, {"line", pos.line}, {"column", pos.column}};
}

auto RangeJson(const llvm::SourceMgr& sm, llvm::SMRange range) -> llvm::json::Value {
  return llvm::json::Object{{"start", LocationJson(sm, range.Start)}, {"end", LocationJson(sm, range.End)}};
}

auto SeverityName(Severity s) -> llvm::StringRef {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

auto DiagnosticJson(const llvm::SourceMgr& sm, const Diagnostic& d) -> llvm::json::Object {
  llvm::json::Array ranges;
  for (const llvm::SMRange& r : d.ranges) ranges.push_back(RangeJson(sm, r));
  llvm::json::Array notes;
  for (const SubDiagnostic& n : d.notes) {
    notes.push_back(llvm::json::Object{{"message", n.message}, {"location", LocationJson(sm, n.loc)}});
  }
  llvm::json::Array help;
  for (const std::string& h : d.help) help.push_back(h);
  llvm::json::Array fixits;
  for (const FixIt& f : d.fixits) {
    fixits.push_back(llvm::json::Object{{"range", RangeJson(sm, f.range)}, {"replacement", f.replacement}});
  }
  const DiagInfo& info = Info(d.id);
  return llvm::json::Object{{"severity", SeverityName(d.severity)},
                            {"code", std::string(info.code)},
                            {"message", d.message},
                            {"location", LocationJson(sm, d.loc)},
                            {"ranges", std::move(ranges)},
                            {"notes", std::move(notes)},
                            {"help", std::move(help)},
                            {"fixits", std::move(fixits)}};
}

}  // namespace

// One JSON object per line (JSON Lines), so that editors can stream them.
void RenderJson(const llvm::SourceMgr& sm, const DiagnosticEngine& engine, llvm::raw_ostream& os) {
  for (const Diagnostic* d : SortedForOutput(sm, engine)) {
    os << llvm::json::Value(DiagnosticJson(sm, *d)) << '\n';
  }
  os.flush();
}

}  // namespace avf::diag
