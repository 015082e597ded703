#include "plan/json_scan.h"

#include <deque>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <llvm/Support/JSON.h>

#include "plan/problems.h"

namespace avf::runtime {

namespace {

// One open bracket. Keys are views into the text, or into `decoded` for a
// key with escapes, compared after decoding ("\u0061" is "a").
struct Frame {
  bool object = false;
  bool expect_key = false;
  std::unordered_set<std::string_view> keys;
};

class Scanner {
 public:
  Scanner(llvm::StringRef text, unsigned max_depth) : text_(text), max_depth_(max_depth) {}

  auto Run() -> std::optional<std::string> {
    for (pos_ = 0; pos_ < text_.size() && !problem_; ++pos_) Step(text_[pos_]);
    return problem_;
  }

 private:
  void Step(char c) {
    switch (c) {
      case '{':
      case '[': Open(c == '{'); break;
      case '}':
      case ']':
        if (!stack_.empty()) stack_.pop_back();
        break;
      case ',':
        if (!stack_.empty() && stack_.back().object) stack_.back().expect_key = true;
        break;
      case '"': String(); break;
      default: break;
    }
  }

  void Open(bool object) {
    if (stack_.size() >= max_depth_) {
      Fail(fmt::format("values nest deeper than {} levels", max_depth_));
      return;
    }
    if (!stack_.empty()) stack_.back().expect_key = false;
    stack_.emplace_back();
    stack_.back().object = object;
    stack_.back().expect_key = object;
  }

  // From the opening quote to the closing one; an unterminated string ends
  // the scan (json::parse reports it).
  void String() {
    size_t start = pos_;
    bool escaped = false;
    for (++pos_; pos_ < text_.size(); ++pos_) {
      if (text_[pos_] == '"') break;
      if (text_[pos_] == '\\') {
        escaped = true;
        ++pos_;  // the escaped character, which may be a quote
      }
    }
    if (pos_ >= text_.size() || stack_.empty() || !stack_.back().expect_key) return;
    stack_.back().expect_key = false;
    llvm::StringRef raw = text_.slice(start, pos_ + 1);
    std::string_view key(raw.data() + 1, raw.size() - 2);
    if (escaped) key = Decode(raw, key);
    if (!stack_.back().keys.insert(key).second) {
      Fail(fmt::format("duplicate key \"{}\" in one object", Printable(key)), start);
    }
  }

  auto Decode(llvm::StringRef quoted, std::string_view fallback) -> std::string_view {
    llvm::Expected<llvm::json::Value> v = llvm::json::parse(quoted);
    if (!v) {
      llvm::consumeError(v.takeError());
      return fallback;
    }
    decoded_.push_back(v->getAsString() ? v->getAsString()->str() : std::string(fallback));
    return decoded_.back();
  }

  void Fail(std::string message) { Fail(std::move(message), pos_); }
  void Fail(std::string message, size_t at) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    problem_ = fmt::format("line {}, column {}: {}", line, column, message);
  }

  llvm::StringRef text_;
  unsigned max_depth_;
  size_t pos_ = 0;
  std::vector<Frame> stack_;
  std::deque<std::string> decoded_;
  std::optional<std::string> problem_;
};

}  // namespace

auto ScanJsonText(llvm::StringRef text, unsigned max_depth) -> std::optional<std::string> {
  return Scanner(text, max_depth).Run();
}

}  // namespace avf::runtime
