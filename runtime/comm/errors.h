// Errors of the communicators. Every failure is an llvm::Error carrying a
// CommError: a machine-readable code (tests branch on it) and one sentence
// for the user that says what was expected and what happened. A failure of
// the rendezvous store met on the way (a peer's address, the NCCL unique id,
// a socket) becomes a CommError too, with the store's sentence kept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <llvm/Support/Error.h>

namespace avf::comm {

// Numbered from 1: the mesh handshake sends the code of a refusal as one byte.
enum class CommErrc : uint8_t {
  kTimeout = 1,      // a peer, a message or the store did not come within the timeout
  kUnreachable,      // no connection to a peer or the store before the deadline
  kConnectionLost,   // a peer or the store closed its connection, or an I/O error on it
  kBadMagic,         // a connection that does not speak the handshake
  kBadVersion,       // the handshake of another version
  kBadToken,         // the job token does not match
  kRankOutOfRange,   // a rank that does not belong where it connects
  kDuplicateRank,    // a rank that is already connected
  kMalformed,        // a message, a handshake or a published value that does not decode
  kInvalidArgument,  // a bad option or argument: a rank, a data type, a colour, a buffer
  kIo,               // a local system call, CUDA or NCCL failed
};
inline constexpr uint8_t kLastErrc = static_cast<uint8_t>(CommErrc::kIo);

// The code's name, for logs and test output ("timeout", "bad-token", ...).
auto ErrcName(CommErrc code) -> std::string_view;

class CommError : public llvm::ErrorInfo<CommError> {
 public:
  static char ID;
  CommError(CommErrc code, std::string message) : code_(code), message_(std::move(message)) {}
  void log(llvm::raw_ostream& os) const override;
  auto convertToErrorCode() const -> std::error_code override;
  auto code() const -> CommErrc { return code_; }
  auto message() const -> std::string override { return message_; }

 private:
  CommErrc code_;
  std::string message_;
};

auto MakeError(CommErrc code, std::string message) -> llvm::Error;

// An llvm::Error taken apart: callers that print or compare failures use this
// instead of handleErrors. A store error keeps its sentence and gets the
// nearest communicator code; any other error is kIo.
struct Failure {
  CommErrc code = CommErrc::kIo;
  std::string message;
};
auto TakeFailure(llvm::Error error) -> Failure;

// The error as a CommError (success stays success): for a store's error that
// the communicator passes on.
auto AsCommError(llvm::Error error) -> llvm::Error;

// "prefix: message", as a CommError with the error's code.
auto Wrap(llvm::Error error, std::string_view prefix) -> llvm::Error;

}  // namespace avf::comm
