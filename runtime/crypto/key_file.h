// The key of sealed checkpoint files (sealed_stream.h): 32 bytes for
// AES-256, read from a file such as a mounted Kubernetes Secret.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

namespace avf::crypto {

// Holds the key bytes and wipes them when it goes; it cannot be copied or
// printed, so the key does not spread through memory or into a log.
class Key {
 public:
  static constexpr size_t kBytes = 32;

  static auto FromBytes(llvm::ArrayRef<uint8_t> bytes) -> std::optional<Key>;

  Key(Key&& other) noexcept;
  auto operator=(Key&& other) noexcept -> Key&;
  Key(const Key&) = delete;
  auto operator=(const Key&) -> Key& = delete;
  ~Key();

  auto bytes() const -> llvm::ArrayRef<uint8_t> { return bytes_; }

  friend auto operator<<(std::ostream& out, const Key& key) -> std::ostream& = delete;

 private:
  Key() = default;
  std::array<uint8_t, kBytes> bytes_{};
};

// Accepts exactly 32 raw bytes, or 64 hexadecimal digits with an optional
// trailing newline (what `openssl rand -hex 32 > FILE` writes). The file may
// be readable by others (Kubernetes mounts Secrets 0644 by default). Errors
// name the file and the problem, never the key's bytes: "key file k.hex:
// holds 33 bytes; a key is 32 raw bytes or 64 hex digits".
auto ReadKeyFile(const std::string& path) -> llvm::Expected<Key>;

}  // namespace avf::crypto
