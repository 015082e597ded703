// Diagnostics: the registry ids, one Diagnostic record, and the engine that
// every phase reports into. Rendering lives in render_text/render_json, and
// --verify-diagnostics in verify.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <llvm/Support/SMLoc.h>

namespace avf::diag {

enum class DiagIndex : uint16_t {
#define DIAG(Name, Code, Kind, Format) Name,
#include "diag/diagnostic_kinds.def"
#undef DIAG
};

inline constexpr std::string_view kDiagFormats[] = {
#define DIAG(Name, Code, Kind, Format) Format,
#include "diag/diagnostic_kinds.def"
#undef DIAG
};

class DiagId;

// The type of `DiagId::Name`: one type per diagnostic, so that Report() knows
// the format at compile time and checks the arguments against it (a wrong
// count or type is a build error, not a run-time exception).
template <DiagIndex I>
struct DiagTag {
  static constexpr std::string_view kFormat = kDiagFormats[static_cast<size_t>(I)];
  constexpr operator DiagId() const;
};

// A diagnostic's identity at run time (stored in Diagnostic, compared);
// `DiagId::Name` converts to it.
class DiagId {
 public:
  constexpr explicit DiagId(DiagIndex index) : index_(index) {}
  constexpr auto index() const -> DiagIndex { return index_; }
  // Spelled out, not defaulted: render_json.cpp includes this as C++17 under clang.
  friend constexpr auto operator==(DiagId a, DiagId b) -> bool { return a.index_ == b.index_; }
  friend constexpr auto operator!=(DiagId a, DiagId b) -> bool { return !(a == b); }

#define DIAG(Name, Code, Kind, Format) static constexpr DiagTag<DiagIndex::Name> Name{};
#include "diag/diagnostic_kinds.def"
#undef DIAG

 private:
  DiagIndex index_;
};

template <DiagIndex I>
constexpr DiagTag<I>::operator DiagId() const {
  return DiagId(I);
}

// IoError renders like Error but makes the exit status 2 (docs/cli.md, Exit status).
enum class Kind : uint8_t { Error, Warning, IoError };
enum class Severity : uint8_t { Error, Warning, Note };

struct DiagInfo {
  std::string_view name;
  std::string_view code;
  Kind kind;
  std::string_view format;
};

auto Info(DiagId id) -> const DiagInfo&;
auto AllDiagInfos() -> std::vector<DiagInfo>;

// A note or help line. Notes carry their own location ("declared here");
// a note without a location and every help line print under the primary.
struct SubDiagnostic {
  llvm::SMLoc loc;
  llvm::SMRange range;
  std::string message;
};

// Replace `range` with `replacement`; an empty range inserts at its start.
struct FixIt {
  llvm::SMRange range;
  std::string replacement;
};

struct Diagnostic {
  DiagId id;
  Severity severity;
  llvm::SMLoc loc;
  std::vector<llvm::SMRange> ranges;
  std::string message;
  std::vector<SubDiagnostic> notes;
  std::vector<std::string> help;
  std::vector<FixIt> fixits;
};

// Backtick-quoted, for messages: Quote("x") == "`x`".
auto Quote(std::string_view text) -> std::string;

// Source text for a message: at most `max` bytes, longer text is cut short
// with `...` at a character boundary (a 1 MB name must not make a 1 MB message).
auto ShortText(std::string_view text, size_t max = 40) -> std::string;

// The candidate closest to `word` by edit distance, for "did you mean", or ""
// when none is close (at most max(2, a third of the word) edits).
auto ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) -> std::string;

// Text arguments of a message longer than this are cut short (ShortText).
inline constexpr size_t kMaxArgumentBytes = 160;

template <typename T>
auto ClipArgument(const T& arg) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return ShortText(std::string_view(arg), kMaxArgumentBytes);
  } else {
    return arg;
  }
}

// The message of diagnostic `id` with `args` (text arguments clipped). The
// format string is checked against the arguments' count and types when this
// is compiled.
template <DiagIndex I, typename... Args>
auto FormatMessage(DiagTag<I>, const Args&... args) -> std::string {
  using Checked = fmt::format_string<decltype(ClipArgument(args))...>;
  return fmt::format(Checked(DiagTag<I>::kFormat), ClipArgument(args)...);
}

class DiagnosticEngine;

// Attaches ranges, notes, help and fix-its to the diagnostic just reported.
class DiagnosticBuilder {
 public:
  DiagnosticBuilder(DiagnosticEngine* engine, size_t index) : engine_(engine), index_(index) {}
  auto Range(llvm::SMRange range) -> DiagnosticBuilder&;
  auto Note(llvm::SMRange range, std::string message) -> DiagnosticBuilder&;
  auto Note(std::string message) -> DiagnosticBuilder&;
  auto Help(std::string message) -> DiagnosticBuilder&;
  auto Fix(llvm::SMRange range, std::string replacement) -> DiagnosticBuilder&;
  // "did you mean `X`?" with the fix-it that writes X over `range`; nothing
  // when `replacement` is empty (no close match).
  auto Suggest(llvm::SMRange range, const std::string& replacement) -> DiagnosticBuilder&;

 private:
  auto Get() -> Diagnostic*;
  DiagnosticEngine* engine_;
  size_t index_;  // SIZE_MAX once the engine stopped storing diagnostics
};

// Collects diagnostics from every phase; errors accumulate and nothing throws.
class DiagnosticEngine {
 public:
  static constexpr size_t kDefaultErrorLimit = 50;

  // Text arguments longer than kMaxArgumentBytes are cut short. `id` is
  // `DiagId::Name`: the arguments are checked against its format at compile time.
  template <DiagIndex I, typename... Args>
  auto Report(DiagTag<I> id, llvm::SMRange range, const Args&... args) -> DiagnosticBuilder {
    return Add(id, range, FormatMessage(id, args...));
  }

  auto diagnostics() const -> const std::vector<Diagnostic>& { return diagnostics_; }
  auto error_count() const -> size_t { return error_count_; }
  auto warning_count() const -> size_t { return warning_count_; }
  auto has_errors() const -> bool { return error_count_ > 0; }
  auto has_io_errors() const -> bool { return io_error_; }
  // True once the error limit is reached: phases stop early instead of
  // producing thousands of cascading errors on garbage input.
  auto limit_reached() const -> bool { return error_limit_ != 0 && error_count_ >= error_limit_; }
  void set_error_limit(size_t limit) { error_limit_ = limit; }
  auto error_limit() const -> size_t { return error_limit_; }
  auto suppressed_count() const -> size_t { return suppressed_; }

 private:
  friend class DiagnosticBuilder;
  auto Add(DiagId id, llvm::SMRange range, std::string message) -> DiagnosticBuilder;

  std::vector<Diagnostic> diagnostics_;
  size_t error_count_ = 0;
  size_t warning_count_ = 0;
  size_t suppressed_ = 0;
  size_t error_limit_ = kDefaultErrorLimit;
  bool io_error_ = false;
};

}  // namespace avf::diag
