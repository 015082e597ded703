// Sealed files: authenticated encryption at rest (AES-256-GCM) of files larger
// than memory, read and written as streams (docs/checkpoint-encryption.md).
//
// Format, version 1 (integers little-endian):
//   header, 36 bytes:
//     0   4  magic "AVFE"
//     4   4  version, 1
//     8   4  C, plaintext bytes per chunk (1 .. kMaxChunkBytes)
//     12  8  the file's nonce: 8 random bytes, drawn anew for every file
//     20 16  header tag: GCM over no data, chunk index 0xffffffff, kind 2
//   then the chunks, at least one: chunk i is C plaintext bytes, the last one
//   1 .. C bytes (0 when the whole plaintext is empty), each written as its
//   ciphertext (as long as its plaintext) then its 16-byte GCM tag.
// GCM's 96-bit IV is the nonce then the chunk index (u32). The additional
// authenticated data of every tag is header bytes 0..19, the index (u32), the
// kind (u8: 0 a chunk, 1 the last chunk, 2 the header) and the caller's
// context string (e.g. the file's name inside the checkpoint). So a wrong key
// or context fails at the header; a flipped byte, reordered chunks, or a chunk
// from another file fail at that chunk; a file cut at a chunk boundary lacks
// the chunk of kind 1, and one cut inside a chunk has no valid size.
//
// The plaintext size follows from the file size and C (SealedPlaintextSize),
// so a reader knows it before reading, for progress and for ReadAll.
// Under one key, two files share a nonce with a chance of about n^2 / 2^65
// for n files (2^-25 for a million); a nonce shared would void GCM's
// guarantees for those two files, so rotate the key long before 2^32 files.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include "crypto/key_file.h"

namespace avf::crypto {

inline constexpr uint32_t kSealedVersion = 1;
inline constexpr size_t kSealedHeaderBytes = 36;
inline constexpr size_t kSealedTagBytes = 16;
inline constexpr uint32_t kDefaultChunkBytes = uint32_t{4} << 20;
inline constexpr uint32_t kMaxChunkBytes = uint32_t{64} << 20;

// Whether a file starting with these bytes is a sealed file (the magic alone):
// lets a reader tell "encrypted: pass a key" from "not encrypted".
auto IsSealed(llvm::ArrayRef<uint8_t> first_bytes) -> bool;
auto SealedFileSize(uint64_t plaintext_bytes, uint32_t chunk_bytes) -> uint64_t;
// The plaintext size of a sealed file of this size, or none when no sealed
// file has this size (it was cut inside a chunk, or has bytes added).
auto SealedPlaintextSize(uint64_t file_bytes, uint32_t chunk_bytes) -> std::optional<uint64_t>;

class SealedWriter {
 public:
  // Writes to `fd`, which stays the caller's to fsync and close; `name`
  // labels the errors. The header is written at once.
  static auto Open(const Key& key, int fd, std::string name, std::string context,
                   uint32_t chunk_bytes = kDefaultChunkBytes) -> llvm::Expected<SealedWriter>;
  // Creates `path` (mode 0600; an existing file is truncated); Finish()
  // fsyncs and closes it.
  static auto Create(const Key& key, const std::string& path, std::string context,
                     uint32_t chunk_bytes = kDefaultChunkBytes) -> llvm::Expected<SealedWriter>;

  SealedWriter(SealedWriter&&) noexcept;
  auto operator=(SealedWriter&&) noexcept -> SealedWriter&;
  ~SealedWriter();

  auto Write(llvm::ArrayRef<uint8_t> bytes) -> llvm::Error;
  // Writes the last chunk. Without it the file reads as truncated.
  auto Finish() -> llvm::Error;
  auto plaintext_bytes() const -> uint64_t;

 private:
  struct State;
  explicit SealedWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class SealedReader {
 public:
  // Reads and authenticates the header: a wrong key or context fails here.
  static auto Open(const Key& key, const std::string& path, std::string context) -> llvm::Expected<SealedReader>;

  SealedReader(SealedReader&&) noexcept;
  auto operator=(SealedReader&&) noexcept -> SealedReader&;
  ~SealedReader();

  // Fills `out` with authenticated plaintext as far as the file goes and
  // returns the count; 0 (for a non-empty `out`) means the end, reached only
  // after the last chunk authenticated. Until then the bytes read are
  // genuine but may not be all: truncation shows only at the end.
  auto Read(llvm::MutableArrayRef<uint8_t> out) -> llvm::Expected<size_t>;
  // Moves to plaintext byte `offset` (random access: the chunk that holds it
  // is read and authenticated); Read goes on from there.
  auto Seek(uint64_t offset) -> llvm::Error;
  // The rest of the plaintext, the end verified.
  auto ReadAll() -> llvm::Expected<std::vector<uint8_t>>;
  auto plaintext_bytes() const -> uint64_t;
  auto chunk_bytes() const -> uint32_t;

 private:
  struct State;
  explicit SealedReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace avf::crypto
