#include "diag/diagnostic.h"

#include <algorithm>
#include <limits>

#include <llvm/ADT/StringRef.h>

namespace avf::diag {

namespace {
constexpr DiagInfo kInfos[] = {
#define DIAG(Name, Code, K, Format) {#Name, Code, Kind::K, Format},
#include "diag/diagnostic_kinds.def"
#undef DIAG
};
constexpr size_t kNoDiagnostic = std::numeric_limits<size_t>::max();
}  // namespace

auto Info(DiagId id) -> const DiagInfo& { return kInfos[static_cast<size_t>(id.index())]; }

auto AllDiagInfos() -> std::vector<DiagInfo> { return {std::begin(kInfos), std::end(kInfos)}; }

auto Quote(std::string_view text) -> std::string { return fmt::format("`{}`", text); }

auto ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) -> std::string {
  std::string best;
  unsigned best_distance = std::max<unsigned>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    unsigned d = llvm::StringRef(word.data(), word.size()).edit_distance(c, true, best_distance);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

auto ShortText(std::string_view text, size_t max) -> std::string {
  if (text.size() <= max) return std::string(text);
  size_t cut = max > 8 ? max - 8 : max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

auto DiagnosticEngine::Add(DiagId id, llvm::SMRange range, std::string message) -> DiagnosticBuilder {
  const DiagInfo& info = Info(id);
  bool is_warning = info.kind == Kind::Warning;
  if (!is_warning && limit_reached()) {
    ++suppressed_;
    return DiagnosticBuilder(this, kNoDiagnostic);
  }
  if (is_warning) {
    ++warning_count_;
  } else {
    ++error_count_;
  }
  if (info.kind == Kind::IoError) io_error_ = true;
  Diagnostic diag{.id = id,
                  .severity = is_warning ? Severity::Warning : Severity::Error,
                  .loc = range.Start,
                  .ranges = {},
                  .message = std::move(message),
                  .notes = {},
                  .help = {},
                  .fixits = {}};
  if (range.isValid() && range.Start != range.End) diag.ranges.push_back(range);
  diagnostics_.push_back(std::move(diag));
  return DiagnosticBuilder(this, diagnostics_.size() - 1);
}

auto DiagnosticBuilder::Get() -> Diagnostic* {
  return index_ == kNoDiagnostic ? nullptr : &engine_->diagnostics_[index_];
}

auto DiagnosticBuilder::Range(llvm::SMRange range) -> DiagnosticBuilder& {
  if (Diagnostic* d = Get(); d && range.isValid()) d->ranges.push_back(range);
  return *this;
}

auto DiagnosticBuilder::Note(llvm::SMRange range, std::string message) -> DiagnosticBuilder& {
  if (Diagnostic* d = Get()) d->notes.push_back({range.Start, range, std::move(message)});
  return *this;
}

auto DiagnosticBuilder::Note(std::string message) -> DiagnosticBuilder& {
  return Note(llvm::SMRange(), std::move(message));
}

auto DiagnosticBuilder::Help(std::string message) -> DiagnosticBuilder& {
  if (Diagnostic* d = Get()) d->help.push_back(std::move(message));
  return *this;
}

auto DiagnosticBuilder::Suggest(llvm::SMRange range, const std::string& replacement) -> DiagnosticBuilder& {
  if (replacement.empty()) return *this;
  return Help(fmt::format("did you mean `{}`?", replacement)).Fix(range, replacement);
}

auto DiagnosticBuilder::Fix(llvm::SMRange range, std::string replacement) -> DiagnosticBuilder& {
  if (Diagnostic* d = Get()) d->fixits.push_back({range, std::move(replacement)});
  return *this;
}

}  // namespace avf::diag
