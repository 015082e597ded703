#include "rendezvous/errors.h"

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

namespace avf::rendezvous {

char StoreError::ID = 0;

auto ErrcName(StoreErrc code) -> std::string_view {
  switch (code) {
    case StoreErrc::kTimeout: return "timeout";
    case StoreErrc::kUnreachable: return "unreachable";
    case StoreErrc::kConnectionLost: return "connection-lost";
    case StoreErrc::kShutdown: return "shutdown";
    case StoreErrc::kBadMagic: return "bad-magic";
    case StoreErrc::kBadVersion: return "bad-version";
    case StoreErrc::kBadToken: return "bad-token";
    case StoreErrc::kWorldSizeMismatch: return "world-size-mismatch";
    case StoreErrc::kRankOutOfRange: return "rank-out-of-range";
    case StoreErrc::kDuplicateRank: return "duplicate-rank";
    case StoreErrc::kPlanMismatch: return "plan-mismatch";
    case StoreErrc::kMalformed: return "malformed";
    case StoreErrc::kFrameTooLarge: return "frame-too-large";
    case StoreErrc::kInvalidArgument: return "invalid-argument";
    case StoreErrc::kNotCounter: return "not-counter";
    case StoreErrc::kIo: return "io";
  }
  return "unknown";
}

void StoreError::log(llvm::raw_ostream& os) const { os << message_; }

auto StoreError::convertToErrorCode() const -> std::error_code { return llvm::inconvertibleErrorCode(); }

auto MakeError(StoreErrc code, std::string message) -> llvm::Error {
  return llvm::make_error<StoreError>(code, std::move(message));
}

auto TakeFailure(llvm::Error error) -> Failure {
  Failure f;
  llvm::handleAllErrors(
      std::move(error),
      [&](const StoreError& e) {
        f = Failure{e.code(), e.message()};
      },
      [&](const llvm::ErrorInfoBase& e) {
        f = Failure{StoreErrc::kIo, e.message()};
      });
  return f;
}

auto FormatSeconds(std::chrono::milliseconds d) -> std::string {
  auto ms = d.count();
  if (ms % 1000 == 0) return fmt::format("{} s", ms / 1000);
  std::string s = fmt::format("{:.3f}", static_cast<double>(ms) / 1000.0);
  while (s.back() == '0') s.pop_back();
  return s + " s";
}

auto QuoteKey(std::string_view key) -> std::string {
  constexpr size_t kShown = 120;
  std::string out = "'";
  for (size_t i = 0; i < key.size() && i < kShown; ++i) {
    auto c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (key.size() > kShown) out += fmt::format("... ({} bytes)", key.size());
  return out + "'";
}

auto FormatKeys(std::span<const std::string> keys, size_t limit) -> std::string {
  std::string out;
  size_t shown = std::min(keys.size(), limit);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += (i + 1 == shown && shown == keys.size()) ? " and " : ", ";
    out += QuoteKey(keys[i]);
  }
  if (shown < keys.size()) out += fmt::format(" and {} more", keys.size() - shown);
  return out;
}

auto FormatRanks(std::span<const int> ranks, size_t limit) -> std::string {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  size_t i = 0, ranges = 0;
  while (i < ranks.size() && ranges < limit) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (ranges > 0) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    ++ranges;
    i = j + 1;
  }
  if (i < ranks.size()) out += fmt::format(" and {} more", ranks.size() - i);
  return out;
}

}  // namespace avf::rendezvous
