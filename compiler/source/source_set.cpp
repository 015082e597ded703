#include "source/source_set.h"
#include <algorithm>

#include <cstring>
#include <string>
#include <vector>

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SHA256.h>

namespace avf::source {

namespace {

// A file that cannot be opened: reported at the import that names it, if any.
auto ReportOpenFailure(diag::DiagnosticEngine& diags, llvm::SMRange from, const std::string& path,
                       const std::string& reason) {
  return diags.Report(diag::DiagId::FileNotFound, from, path, reason);
}

// Reads what is not a regular file (a pipe, a device such as /dev/zero) in
// chunks, stopping once it exceeds `limit`: such a file has no size to check
// up front and may never end.
auto ReadStream(llvm::sys::fs::file_t file, const std::string& name, uint64_t limit)
    -> llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> {
  std::string data;
  std::vector<char> chunk(1 << 16);
  std::error_code ec;
  while (data.size() <= limit) {
    llvm::Expected<size_t> n = llvm::sys::fs::readNativeFile(file, chunk);
    if (!n) {
      ec = llvm::errorToErrorCode(n.takeError());
      break;
    }
    if (*n == 0) break;
    data.append(chunk.data(), *n);
  }
  if (ec) return ec;
  return llvm::MemoryBuffer::getMemBufferCopy(data, name);
}

auto ReadStream(const std::string& path, uint64_t limit) -> llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> {
  llvm::Expected<llvm::sys::fs::file_t> file = llvm::sys::fs::openNativeFileForRead(path);
  if (!file) return llvm::errorToErrorCode(file.takeError());
  auto buffer = ReadStream(*file, path, limit);
  llvm::sys::fs::closeFile(*file);
  return buffer;
}

}  // namespace

auto SourceSet::LoadFile(const std::string& path, diag::DiagnosticEngine& diags, llvm::SMRange from)
    -> std::optional<unsigned> {
  if (path == "-" && !from.isValid()) {
    return Add(ReadStream(llvm::sys::fs::getStdinHandle(), "<stdin>", kMaxFileBytes), "<stdin>", false, diags, from);
  }
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
  // Files of /proc report size 0 yet have contents: read them as streams.
  bool regular = llvm::sys::fs::is_regular_file(status) && status.getSize() > 0;
  auto buffer = regular ? llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/true)
                        : ReadStream(path, kMaxFileBytes);
  return Add(std::move(buffer), path, regular, diags, from);
}

auto SourceSet::Add(llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer, const std::string& path, bool regular,
                    diag::DiagnosticEngine& diags, llvm::SMRange from) -> std::optional<unsigned> {
  if (!buffer) {
    ReportOpenFailure(diags, from, path, buffer.getError().message());
    return std::nullopt;
  }
  if ((*buffer)->getBufferSize() > kMaxFileBytes) {
    // A stream was read only up to the limit: its size is not known.
    std::string size =
        regular ? std::to_string((*buffer)->getBufferSize()) : fmt::format("more than {}", kMaxFileBytes);
    diags.Report(diag::DiagId::FileTooLarge, from, path, size, kMaxFileBytes);
    return std::nullopt;
  }
  unsigned id = mgr_.AddNewSourceBuffer(std::move(*buffer), from.Start);
  if (!Validate(id, diags, from)) return std::nullopt;
  return id;
}

auto SourceSet::ContentSha256() const -> std::string {
  llvm::SHA256 hash;
  for (unsigned id = 1; id <= mgr_.getNumBuffers(); ++id) {
    llvm::StringRef text = Text(id);
    hash.update(std::to_string(text.size()) + ":");
    hash.update(text);
  }
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

auto SourceSet::AddBuffer(std::string name, std::string contents, diag::DiagnosticEngine& diags)
    -> std::optional<unsigned> {
  unsigned id = mgr_.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(contents, name), {});
  if (!Validate(id, diags)) return std::nullopt;
  return id;
}

auto SourceSet::Validate(unsigned buffer_id, diag::DiagnosticEngine& diags, llvm::SMRange from) -> bool {
  llvm::StringRef text = Text(buffer_id);
  if (std::memchr(text.data(), '\0', text.size()) != nullptr) {
    // Pointing into binary data would print it; point at the import instead.
    diags.Report(diag::DiagId::FileIsBinary, from, Name(buffer_id).str());
    return false;
  }
  // ASCII needs no decoding: the check starts at the first other byte.
  const char* first =
      std::find_if(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  const auto* end = reinterpret_cast<const llvm::UTF8*>(text.end());
  const auto* bad = reinterpret_cast<const llvm::UTF8*>(first);
  if (!llvm::isLegalUTF8String(&bad, end)) {
    llvm::SMLoc loc = llvm::SMLoc::getFromPointer(reinterpret_cast<const char*>(bad));
    diags.Report(diag::DiagId::InvalidUtf8, llvm::SMRange(loc, loc), static_cast<unsigned>(*bad));
    return false;
  }
  return true;
}

}  // namespace avf::source
