// The file operations of interop/: positioned reads that finish or fail, and
// writes that replace a file atomically. Internal to the folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/Support/Error.h>

namespace avf::interop {

// `size` bytes at `offset` of `fd`, or an error that says why not (a read
// error, or the file ending first).
auto ReadAt(int fd, uint64_t offset, size_t size, uint8_t* into) -> llvm::Error;

// Every byte, retrying short writes; false with errno set on failure.
auto WriteAll(int fd, const void* data, size_t size) -> bool;

// Creates a temporary file beside `path`, has `write` fill it (false: failed,
// errno says why), flushes it to disk, renames it over `path` and syncs the
// folder. On any failure the temporary file is removed and `path` is left
// as it was; the error names `path` and `what` ("the safetensors file").
auto WriteAtomically(const std::string& path, const char* what, llvm::function_ref<bool(int fd)> write) -> llvm::Error;

// The whole of a small regular file (at most `limit` bytes).
auto ReadSmallFile(const std::string& path, const char* what, uint64_t limit) -> llvm::Expected<std::string>;

}  // namespace avf::interop
