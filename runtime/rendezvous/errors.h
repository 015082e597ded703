// Errors of the rendezvous store, and the helpers that spell keys, ranks and
// durations in its messages. Every failure is an llvm::Error carrying a
// StoreError: a machine-readable code (tests and avf-run branch on it) and one
// sentence for the user that says what was expected and what happened.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/Support/Error.h>

namespace avf::rendezvous {

enum class StoreErrc {
  kTimeout,            // a key, a rank or a reply did not come within the timeout
  kUnreachable,        // no connection to the store before the connect deadline
  kConnectionLost,     // the store (or the peer) closed the connection, or an I/O error on it
  kShutdown,           // the store was shut down while the request was pending
  kBadMagic,           // the peer does not speak this protocol
  kBadVersion,         // same protocol, other version
  kBadToken,           // the job token does not match the store's
  kWorldSizeMismatch,  // the rank's world size differs from the store's
  kRankOutOfRange,     // rank < 0 or rank >= world size
  kDuplicateRank,      // the rank is already connected
  kPlanMismatch,       // the rank read another plan.json than the store's rank (its SHA-256 differs)
  kMalformed,          // a frame that does not decode as the message it claims to be
  kFrameTooLarge,      // a frame over the size limit (checked before anything is allocated)
  kInvalidArgument,    // an empty or too long key, a bad option
  kNotCounter,         // Add on a key whose value is not a decimal integer, or an overflow
  kIo,                 // a local system call failed (socket, bind, /dev/urandom, a token file)
};

// The code's name, for logs and test output ("timeout", "bad-token", ...).
auto ErrcName(StoreErrc code) -> std::string_view;

class StoreError : public llvm::ErrorInfo<StoreError> {
 public:
  static char ID;
  StoreError(StoreErrc code, std::string message) : code_(code), message_(std::move(message)) {}
  void log(llvm::raw_ostream& os) const override;
  auto convertToErrorCode() const -> std::error_code override;
  auto code() const -> StoreErrc { return code_; }
  auto message() const -> std::string override { return message_; }

 private:
  StoreErrc code_;
  std::string message_;
};

auto MakeError(StoreErrc code, std::string message) -> llvm::Error;

// An llvm::Error taken apart: callers that print or compare failures use this
// instead of handleErrors. A foreign (non-StoreError) error maps to kIo.
struct Failure {
  StoreErrc code = StoreErrc::kIo;
  std::string message;
};
auto TakeFailure(llvm::Error error) -> Failure;

// "0.3 s", "2 s", "1.25 s": durations as users write them.
auto FormatSeconds(std::chrono::milliseconds d) -> std::string;

// A key inside quotes, non-printable bytes as \xNN, long keys shortened.
auto QuoteKey(std::string_view key) -> std::string;

// "'a', 'b' and 3 more": at most `limit` quoted keys.
auto FormatKeys(std::span<const std::string> keys, size_t limit = 5) -> std::string;

// "rank 3", "ranks 0-2, 5, 7-9", "ranks 0-9, 11 and 40 more": sorted ranks as
// ranges, at most `limit` ranges (a 16k-rank job must not print 16k numbers).
auto FormatRanks(std::span<const int> ranks, size_t limit = 8) -> std::string;

}  // namespace avf::rendezvous
