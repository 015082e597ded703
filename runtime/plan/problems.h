// Collects the problems of one plan file: every reader and check reports
// into one Problems, which becomes a PlanError. The first kMaxShown are kept
// as text; the rest are only counted, so a plan with a million bad ranks
// costs no more memory than one with twenty.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

namespace avf::runtime {

class Problems {
 public:
  static constexpr size_t kMaxShown = 20;

  explicit Problems(llvm::StringRef file) : file_(file.str()) {}

  // `path` is a key path such as `ranks[17].tensor`; empty for the file itself.
  void Add(llvm::StringRef path, llvm::StringRef message);

  template <typename... Args>
  void Addf(llvm::StringRef path, fmt::format_string<Args...> format, Args&&... args) {
    if (lines_.size() >= kMaxShown) {
      ++total_;
      return;
    }
    Add(path, fmt::format(format, std::forward<Args>(args)...));
  }

  auto empty() const -> bool { return total_ == 0; }
  auto count() const -> size_t { return total_; }
  auto file() const -> llvm::StringRef { return file_; }

  // Success when nothing was reported, else a PlanError with the lines.
  auto TakeError() -> llvm::Error;

 private:
  std::string file_;
  std::vector<std::string> lines_;
  size_t total_ = 0;
};

// A value as it may appear in a message: control characters escaped, long
// text cut, so that hostile strings cannot garble the terminal.
auto Printable(llvm::StringRef text, size_t max_chars = 60) -> std::string;

// Checked int64 arithmetic: nullopt-free overflow reporting for values read
// from the file (sizes there are untrusted and may be near INT64_MAX).
auto MulOverflows(int64_t a, int64_t b, int64_t* out) -> bool;
auto AddOverflows(int64_t a, int64_t b, int64_t* out) -> bool;

}  // namespace avf::runtime
