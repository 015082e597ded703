// Loads .avf files into one llvm::SourceMgr after checking that they are
// source text at all: readable, a regular file, not too large, no NUL bytes,
// valid UTF-8. Every later phase points into these buffers with SMLoc.
#pragma once

#include <optional>
#include <string>

#include <llvm/Support/ErrorOr.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

#include "diag/diagnostic.h"

namespace avf::source {

// Larger inputs are refused before lexing (a job file is a few KB).
inline constexpr uint64_t kMaxFileBytes = 64ull << 20;

class SourceSet {
 public:
  // Returns the buffer id, or nullopt after reporting why the file cannot be
  // used. `from` locates the import that names the file (invalid for the
  // command-line file), where the diagnostic is then shown; the diagnostic is
  // the same either way (a missing, unreadable or directory file is an I/O
  // error, exit status 2; a binary or non-UTF-8 one an input error, 1). Files
  // that are not regular (pipes, devices) are read up to the size limit; the
  // command-line path `-` is standard input, shown as `<stdin>`.
  auto LoadFile(const std::string& path, diag::DiagnosticEngine& diags, llvm::SMRange from = {})
      -> std::optional<unsigned>;

  // For tests and tools: a buffer that does not come from disk.
  auto AddBuffer(std::string name, std::string contents, diag::DiagnosticEngine& diags) -> std::optional<unsigned>;

  auto mgr() -> llvm::SourceMgr& { return mgr_; }
  auto mgr() const -> const llvm::SourceMgr& { return mgr_; }
  auto Text(unsigned buffer_id) const -> llvm::StringRef { return mgr_.getMemoryBuffer(buffer_id)->getBuffer(); }
  auto Name(unsigned buffer_id) const -> llvm::StringRef {
    return mgr_.getMemoryBuffer(buffer_id)->getBufferIdentifier();
  }
  // SHA-256 of every buffer's bytes in load order, each preceded by its
  // length, in lowercase hex: what a job was compiled from (plan.json's
  // `source_sha256`). Paths differ between machines, contents identify the job.
  auto ContentSha256() const -> std::string;

 private:
  auto Validate(unsigned buffer_id, diag::DiagnosticEngine& diags, llvm::SMRange from = {}) -> bool;
  auto Add(llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer, const std::string& path, bool regular,
           diag::DiagnosticEngine& diags, llvm::SMRange from) -> std::optional<unsigned>;
  llvm::SourceMgr mgr_;
};

}  // namespace avf::source
