#include "source/source_set.h"

#include <cstring>

#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>

namespace avf::source {

namespace {

// Errors about the file named on the command line are I/O errors (exit 2);
// the same problem with an imported file is an error in the importing source.
auto ReportOpenFailure(diag::DiagnosticEngine& diags, llvm::SMRange from, const std::string& path,
                       const std::string& reason) {
  return diags.Report(diag::DiagId::FileNotFound, from, path, reason);
}

}  // namespace

auto SourceSet::LoadFile(const std::string& path, diag::DiagnosticEngine& diags,
                         llvm::SMRange from) -> std::optional<unsigned> {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status)) {
    ReportOpenFailure(diags, from, path, ec.message());
    return std::nullopt;
  }
  if (llvm::sys::fs::is_directory(status)) {
    diags.Report(diag::DiagId::FileIsDirectory, from, path);
    return std::nullopt;
  }
  if (llvm::sys::fs::is_regular_file(status) && status.getSize() > kMaxFileBytes) {
    diags.Report(diag::DiagId::FileTooLarge, from, path, status.getSize(), kMaxFileBytes);
    return std::nullopt;
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                                   /*RequiresNullTerminator=*/true);
  if (!buffer) {
    ReportOpenFailure(diags, from, path, buffer.getError().message());
    return std::nullopt;
  }
  if ((*buffer)->getBufferSize() > kMaxFileBytes) {
    diags.Report(diag::DiagId::FileTooLarge, from, path, (*buffer)->getBufferSize(), kMaxFileBytes);
    return std::nullopt;
  }
  unsigned id = mgr_.AddNewSourceBuffer(std::move(*buffer), from.Start);
  if (!Validate(id, diags)) return std::nullopt;
  return id;
}

auto SourceSet::AddBuffer(std::string name, std::string contents, diag::DiagnosticEngine& diags)
    -> std::optional<unsigned> {
  unsigned id = mgr_.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(contents, name), {});
  if (!Validate(id, diags)) return std::nullopt;
  return id;
}

auto SourceSet::Validate(unsigned buffer_id, diag::DiagnosticEngine& diags) -> bool {
  llvm::StringRef text = Text(buffer_id);
  if (std::memchr(text.data(), '\0', text.size()) != nullptr) {
    diags.Report(diag::DiagId::FileIsBinary, {}, Name(buffer_id).str());
    return false;
  }
  const auto* begin = reinterpret_cast<const llvm::UTF8*>(text.begin());
  const auto* end = reinterpret_cast<const llvm::UTF8*>(text.end());
  const llvm::UTF8* bad = begin;
  if (!llvm::isLegalUTF8String(&bad, end)) {
    llvm::SMLoc loc = llvm::SMLoc::getFromPointer(reinterpret_cast<const char*>(bad));
    diags.Report(diag::DiagId::InvalidUtf8, llvm::SMRange(loc, loc), static_cast<unsigned>(*bad));
    return false;
  }
  return true;
}

}  // namespace avf::source
