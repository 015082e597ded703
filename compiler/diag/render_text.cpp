#include <algorithm>

#include "diag/render.h"

namespace avf::diag {

namespace {

// Lines longer than this are shown as a window around the caret, so that a
// diagnostic on a 1 MB line prints a readable snippet instead of the line.
constexpr size_t kMaxShownLine = 160;
constexpr size_t kWindowBefore = 60;

struct Snippet {
  std::string text;    // source line as displayed (tabs expanded, windowed)
  std::string marker;  // `^` and `~` aligned under text
  size_t caret_column = 0;
};

auto IsContinuationByte(char c) -> bool { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Display column of each byte of the shown part of the line.
class LineLayout {
 public:
  LineLayout(llvm::StringRef line, size_t first) : line_(line), first_(first) {}

  void Build(std::string& out) {
    columns_.assign(line_.size() - first_ + 1, 0);
    size_t col = 0;
    for (size_t i = first_; i < line_.size(); ++i) {
      char c = line_[i];
      out.push_back(c == '\t' ? ' ' : c);
      if (IsContinuationByte(c)) {
        columns_[i - first_] = col - 1;  // the column of its lead byte
        continue;
      }
      columns_[i - first_] = col;
      size_t next = c == '\t' ? (col / 8 + 1) * 8 : col + 1;
      out.append(next - col - 1, ' ');
      col = next;
    }
    columns_.back() = col;
  }

  // Column of byte `offset` of the full line, clamped to the shown part.
  auto ColumnOf(size_t offset) const -> size_t {
    if (offset < first_) return 0;
    return columns_[std::min(offset - first_, columns_.size() - 1)];
  }

 private:
  llvm::StringRef line_;
  size_t first_;
  std::vector<size_t> columns_;
};

auto LineContaining(const llvm::SourceMgr& sm, llvm::SMLoc loc, const char** line_start) -> llvm::StringRef {
  unsigned id = sm.FindBufferContainingLoc(loc);
  llvm::StringRef buffer = sm.getMemoryBuffer(id)->getBuffer();
  const char* begin = buffer.begin();
  const char* end = buffer.end();
  const char* p = loc.getPointer();
  const char* start = p;
  while (start > begin && start[-1] != '\n' && start[-1] != '\r') --start;
  const char* stop = p;
  while (stop < end && *stop != '\n' && *stop != '\r') ++stop;
  *line_start = start;
  return llvm::StringRef(start, stop - start);
}

auto MakeSnippet(const llvm::SourceMgr& sm, const Diagnostic& d) -> Snippet {
  const char* line_start = nullptr;
  llvm::StringRef line = LineContaining(sm, d.loc, &line_start);
  size_t caret = d.loc.getPointer() - line_start;
  size_t first = 0;
  size_t last = line.size();
  if (line.size() > kMaxShownLine) {
    first = caret > kWindowBefore ? caret - kWindowBefore : 0;
    while (first > 0 && IsContinuationByte(line[first])) --first;
    last = std::min(line.size(), first + kMaxShownLine);
    while (last < line.size() && IsContinuationByte(line[last])) ++last;
  }
  llvm::StringRef shown = line.substr(0, last);
  Snippet s;
  if (first > 0) s.text = "...";
  LineLayout layout(shown, first);
  layout.Build(s.text);
  size_t shift = first > 0 ? 3 : 0;
  if (last < line.size()) s.text += "...";
  std::string marker(s.text.size() + 1, ' ');
  auto mark = [&](size_t col, char c) {
    if (col + shift < marker.size()) marker[col + shift] = c;
  };
  for (const llvm::SMRange& r : d.ranges) {
    const char* rb = std::max(r.Start.getPointer(), line_start);
    const char* re = std::min(r.End.getPointer(), line_start + last);
    for (const char* p = rb; p < re; ++p) {
      if (!IsContinuationByte(*p)) mark(layout.ColumnOf(p - line_start), '~');
    }
  }
  s.caret_column = layout.ColumnOf(caret) + shift;
  mark(layout.ColumnOf(caret), '^');
  marker.erase(marker.find_last_not_of(' ') + 1);
  s.marker = std::move(marker);
  return s;
}

class TextRenderer {
 public:
  TextRenderer(const llvm::SourceMgr& sm, llvm::raw_ostream& os, bool color) : sm_(sm), os_(os), color_(color) {}

  void Render(const Diagnostic& d) {
    Header(d.loc, d.severity, d.message, Info(d.id).code);
    if (d.loc.isValid()) Source(d);
    for (const SubDiagnostic& note : d.notes) {
      if (!note.loc.isValid()) continue;
      Header(note.loc, Severity::Note, note.message, {});
      Diagnostic sub{.id = d.id,
                     .severity = Severity::Note,
                     .loc = note.loc,
                     .ranges = {},
                     .message = {},
                     .notes = {},
                     .help = {},
                     .fixits = {}};
      if (note.range.isValid() && note.range.Start != note.range.End) sub.ranges.push_back(note.range);
      Source(sub);
    }
    for (const SubDiagnostic& note : d.notes) {
      if (!note.loc.isValid()) Trailer("note", note.message);
    }
    for (const std::string& help : d.help) Trailer("help", help);
  }

  void Summary(const DiagnosticEngine& engine) {
    if (engine.suppressed_count() > 0) {
      os_ << engine.suppressed_count() << " more errors not shown (the limit is " << engine.error_limit() << ")\n";
    }
    size_t errors = engine.error_count() + engine.suppressed_count();
    size_t warnings = engine.warning_count();
    if (errors == 0 && warnings == 0) return;
    std::vector<std::string> parts;
    if (errors) parts.push_back(fmt::format("{} error{}", errors, errors == 1 ? "" : "s"));
    if (warnings) parts.push_back(fmt::format("{} warning{}", warnings, warnings == 1 ? "" : "s"));
    os_ << fmt::format("{} generated.\n", fmt::join(parts, " and "));
  }

 private:
  void Header(llvm::SMLoc loc, Severity severity, llvm::StringRef message, llvm::StringRef code) {
    Bold();
    Position pos = PositionOf(sm_, loc);
    if (!pos.file.empty()) os_ << pos.file << ':' << pos.line << ':' << pos.column << ": ";
    else os_ << "aviflowc: ";
    switch (severity) {
      case Severity::Error:
        Color(llvm::raw_ostream::RED);
        os_ << "error: ";
        break;
      case Severity::Warning:
        Color(llvm::raw_ostream::MAGENTA);
        os_ << "warning: ";
        break;
      case Severity::Note:
        Color(llvm::raw_ostream::CYAN);
        os_ << "note: ";
        break;
    }
    Bold();
    os_ << message;
    if (!code.empty()) os_ << " [" << code << ']';
    Reset();
    os_ << '\n';
  }

  void Source(const Diagnostic& d) {
    Snippet s = MakeSnippet(sm_, d);
    os_ << "  " << s.text << '\n';
    Color(llvm::raw_ostream::GREEN);
    os_ << "  " << s.marker << '\n';
    Reset();
    for (const FixIt& fix : d.fixits) {
      if (fix.replacement.empty() || fix.replacement.find('\n') != std::string::npos) continue;
      Color(llvm::raw_ostream::GREEN);
      os_ << "  " << std::string(s.caret_column, ' ') << fix.replacement << '\n';
      Reset();
    }
  }

  void Trailer(llvm::StringRef label, llvm::StringRef text) {
    os_ << "  = ";
    Bold();
    os_ << label << ':';
    Reset();
    os_ << ' ' << text << '\n';
  }

  void Bold() {
    if (color_) os_.changeColor(llvm::raw_ostream::SAVEDCOLOR, true);
  }
  void Color(llvm::raw_ostream::Colors c) {
    if (color_) os_.changeColor(c, true);
  }
  void Reset() {
    if (color_) os_.resetColor();
  }

  const llvm::SourceMgr& sm_;
  llvm::raw_ostream& os_;
  bool color_;
};

}  // namespace

auto PositionOf(const llvm::SourceMgr& sm, llvm::SMLoc loc) -> Position {
  if (!loc.isValid()) return {};
  unsigned id = sm.FindBufferContainingLoc(loc);
  if (id == 0) return {};
  auto [line, column] = sm.getLineAndColumn(loc, id);
  return {sm.getMemoryBuffer(id)->getBufferIdentifier().str(), line, column};
}

auto SortedForOutput(const llvm::SourceMgr& sm, const DiagnosticEngine& engine) -> std::vector<const Diagnostic*> {
  struct Keyed {
    unsigned buffer;
    const char* pointer;
    const Diagnostic* diag;
  };
  std::vector<Keyed> keyed;
  for (const Diagnostic& d : engine.diagnostics()) {
    unsigned buffer = d.loc.isValid() ? sm.FindBufferContainingLoc(d.loc) : 0;
    keyed.push_back({buffer, d.loc.getPointer(), &d});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    if (a.buffer != b.buffer) return a.buffer < b.buffer;
    return std::less<const char*>()(a.pointer, b.pointer);
  });
  std::vector<const Diagnostic*> out;
  for (const Keyed& k : keyed) out.push_back(k.diag);
  return out;
}

namespace {

// After the summary, once: where the codes shown are explained, as rustc
// points at `rustc --explain`. The codes in the order they were shown.
void ExplainHint(const std::vector<const Diagnostic*>& shown, llvm::raw_ostream& os) {
  constexpr size_t kMaxListed = 8;
  std::vector<std::string_view> codes;
  for (const Diagnostic* d : shown) {
    std::string_view code = Info(d->id).code;
    if (!code.empty() && std::find(codes.begin(), codes.end(), code) == codes.end()) codes.push_back(code);
  }
  if (codes.empty()) return;
  if (codes.size() == 1) {
    os << fmt::format("For more information, try `aviflowc explain {}`.\n", codes.front());
    return;
  }
  std::string list;
  size_t listed = std::min(codes.size(), kMaxListed);
  for (size_t i = 0; i < listed; ++i) {
    list += i == 0 ? "" : i + 1 == listed && listed == codes.size() ? " and " : ", ";
    list += codes[i];
  }
  if (listed < codes.size()) list += fmt::format(" and {} more", codes.size() - listed);
  os << fmt::format("For more information, try `aviflowc explain CODE` for {}.\n", list);
}

}  // namespace

void RenderText(const llvm::SourceMgr& sm, const DiagnosticEngine& engine, llvm::raw_ostream& os, bool color) {
  TextRenderer renderer(sm, os, color);
  std::vector<const Diagnostic*> shown = SortedForOutput(sm, engine);
  for (const Diagnostic* d : shown) renderer.Render(*d);
  renderer.Summary(engine);
  ExplainHint(shown, os);
  os.flush();
}

}  // namespace avf::diag
