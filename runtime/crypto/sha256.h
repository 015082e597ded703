// SHA-256 over OpenSSL: streaming, of a whole file, and its hexadecimal form.
// Checkpoints record the digest of each file they hold, so a resumed run can
// tell a file that changed on disk from the one that was written.
#pragma once

#include <openssl/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

namespace avf::crypto {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  Sha256(Sha256&& other) noexcept : ctx_(other.ctx_) { other.ctx_ = nullptr; }
  auto operator=(Sha256&& other) noexcept -> Sha256&;
  Sha256(const Sha256&) = delete;
  auto operator=(const Sha256&) -> Sha256& = delete;
  ~Sha256();

  void Update(llvm::ArrayRef<uint8_t> bytes);
  void Update(llvm::StringRef text) { Update(llvm::arrayRefFromStringRef(text)); }
  // The digest of everything given since construction or the last Final();
  // the object then starts over, empty.
  auto Final() -> Digest;

 private:
  EVP_MD_CTX* ctx_;
};

// 64 lowercase hexadecimal digits.
auto Hex(const Digest& digest) -> std::string;
// 64 hexadecimal digits (either case); nothing else, no whitespace.
auto ParseHex(llvm::StringRef hex) -> std::optional<Digest>;

// Streams a regular file in 4 MiB blocks. The error names the file:
// "ckpt/rank_0000.bin: No such file or directory".
auto Sha256File(const std::string& path) -> llvm::Expected<Digest>;

}  // namespace avf::crypto
