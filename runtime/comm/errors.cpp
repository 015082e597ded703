#include "comm/errors.h"

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

#include "rendezvous/errors.h"

namespace avf::comm {

namespace {

using rendezvous::StoreErrc;

auto FromStore(StoreErrc code) -> CommErrc {
  switch (code) {
    case StoreErrc::kTimeout: return CommErrc::kTimeout;
    case StoreErrc::kUnreachable: return CommErrc::kUnreachable;
    case StoreErrc::kConnectionLost:
    case StoreErrc::kShutdown: return CommErrc::kConnectionLost;
    case StoreErrc::kBadMagic: return CommErrc::kBadMagic;
    case StoreErrc::kBadVersion: return CommErrc::kBadVersion;
    case StoreErrc::kBadToken: return CommErrc::kBadToken;
    case StoreErrc::kRankOutOfRange: return CommErrc::kRankOutOfRange;
    case StoreErrc::kDuplicateRank: return CommErrc::kDuplicateRank;
    case StoreErrc::kMalformed:
    case StoreErrc::kFrameTooLarge: return CommErrc::kMalformed;
    case StoreErrc::kWorldSizeMismatch:
    case StoreErrc::kPlanMismatch:
    case StoreErrc::kInvalidArgument:
    case StoreErrc::kNotCounter: return CommErrc::kInvalidArgument;
    case StoreErrc::kIo: return CommErrc::kIo;
  }
  return CommErrc::kIo;
}

}  // namespace

char CommError::ID = 0;

auto ErrcName(CommErrc code) -> std::string_view {
  switch (code) {
    case CommErrc::kTimeout: return "timeout";
    case CommErrc::kUnreachable: return "unreachable";
    case CommErrc::kConnectionLost: return "connection-lost";
    case CommErrc::kBadMagic: return "bad-magic";
    case CommErrc::kBadVersion: return "bad-version";
    case CommErrc::kBadToken: return "bad-token";
    case CommErrc::kRankOutOfRange: return "rank-out-of-range";
    case CommErrc::kDuplicateRank: return "duplicate-rank";
    case CommErrc::kMalformed: return "malformed";
    case CommErrc::kInvalidArgument: return "invalid-argument";
    case CommErrc::kIo: return "io";
  }
  return "unknown";
}

void CommError::log(llvm::raw_ostream& os) const { os << message_; }

auto CommError::convertToErrorCode() const -> std::error_code { return llvm::inconvertibleErrorCode(); }

auto MakeError(CommErrc code, std::string message) -> llvm::Error {
  return llvm::make_error<CommError>(code, std::move(message));
}

auto TakeFailure(llvm::Error error) -> Failure {
  Failure f;
  llvm::handleAllErrors(
      std::move(error),
      [&](const CommError& e) {
        f = Failure{e.code(), e.message()};
      },
      [&](const rendezvous::StoreError& e) {
        f = Failure{FromStore(e.code()), e.message()};
      },
      [&](const llvm::ErrorInfoBase& e) {
        f = Failure{CommErrc::kIo, e.message()};
      });
  return f;
}

auto AsCommError(llvm::Error error) -> llvm::Error {
  if (!error) return error;
  Failure f = TakeFailure(std::move(error));
  return MakeError(f.code, std::move(f.message));
}

auto Wrap(llvm::Error error, std::string_view prefix) -> llvm::Error {
  Failure f = TakeFailure(std::move(error));
  return MakeError(f.code, fmt::format("{}: {}", prefix, f.message));
}

}  // namespace avf::comm
