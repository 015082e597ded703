#include "plan/problems.h"

#include <llvm/Support/raw_ostream.h>

#include "plan/plan.h"

namespace avf::runtime {

char PlanError::ID = 0;

void PlanError::log(llvm::raw_ostream& os) const {
  for (size_t i = 0; i < lines_.size(); ++i) os << (i ? "\n" : "") << lines_[i];
  if (total_ > lines_.size()) os << "\n" << fmt::format("{} more problems not shown", total_ - lines_.size());
}

auto PlanError::convertToErrorCode() const -> std::error_code { return llvm::inconvertibleErrorCode(); }

void Problems::Add(llvm::StringRef path, llvm::StringRef message) {
  ++total_;
  if (lines_.size() >= kMaxShown) return;
  if (path.empty()) lines_.push_back(fmt::format("{}: {}", file_, message.str()));
  else lines_.push_back(fmt::format("{}: {}: {}", file_, path.str(), message.str()));
}

auto Problems::TakeError() -> llvm::Error {
  if (total_ == 0) return llvm::Error::success();
  auto error = llvm::make_error<PlanError>(std::move(lines_), total_);
  lines_.clear();
  total_ = 0;
  return error;
}

auto Printable(llvm::StringRef text, size_t max_chars) -> std::string {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);  // UTF-8 sequences pass through: json::parse checked them
    }
  }
  return out;
}

auto MulOverflows(int64_t a, int64_t b, int64_t* out) -> bool { return __builtin_mul_overflow(a, b, out); }
auto AddOverflows(int64_t a, int64_t b, int64_t* out) -> bool { return __builtin_add_overflow(a, b, out); }

}  // namespace avf::runtime
