#include "crypto/key_file.h"

#include <openssl/crypto.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "crypto/sha256.h"
#include "io/regular_file.h"

namespace avf::crypto {

namespace {

// 64 hex digits and "\r\n"; anything longer is not a key file.
constexpr size_t kMaxKeyFileBytes = 2 * Key::kBytes + 2;

auto KeyFileError(const std::string& path, const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "key file %s: %s", path.c_str(), why.c_str());
}

auto SizeProblem(uint64_t bytes) -> std::string {
  return fmt::format("holds {} bytes; a key is 32 raw bytes or 64 hex digits (`openssl rand -hex 32 > FILE` makes one)",
                     bytes);
}

auto IsHexDigit(uint8_t c) -> bool {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The key the bytes of a key file hold, or why they hold none.
auto KeyOfBytes(llvm::ArrayRef<uint8_t> bytes, std::string& problem) -> std::optional<Key> {
  if (bytes.size() == Key::kBytes) {
    if (std::all_of(bytes.begin(), bytes.end(), IsHexDigit)) {
      problem = "holds 32 hex digits, a 128-bit key; a key is 32 raw bytes or 64 hex digits (`openssl rand -hex 32`)";
      return std::nullopt;
    }
    return Key::FromBytes(bytes);
  }
  llvm::ArrayRef<uint8_t> text = bytes;
  if (text.size() > 2 * Key::kBytes && text.back() == '\n') text = text.drop_back();
  if (text.size() > 2 * Key::kBytes && text.back() == '\r') text = text.drop_back();
  if (text.size() != 2 * Key::kBytes) {
    problem = SizeProblem(bytes.size());
    return std::nullopt;
  }
  std::optional<Digest> decoded = ParseHex(llvm::toStringRef(text));
  if (!decoded) {
    problem = "holds 64 characters that are not all hex digits; a key is 32 raw bytes or 64 hex digits";
    return std::nullopt;
  }
  std::optional<Key> key = Key::FromBytes(*decoded);
  OPENSSL_cleanse(decoded->data(), decoded->size());
  return key;
}

}  // namespace

auto Key::FromBytes(llvm::ArrayRef<uint8_t> bytes) -> std::optional<Key> {
  if (bytes.size() != kBytes) return std::nullopt;
  Key key;
  std::copy(bytes.begin(), bytes.end(), key.bytes_.begin());
  return key;
}

Key::Key(Key&& other) noexcept : bytes_(other.bytes_) { OPENSSL_cleanse(other.bytes_.data(), kBytes); }

auto Key::operator=(Key&& other) noexcept -> Key& {
  if (this != &other) {
    bytes_ = other.bytes_;
    OPENSSL_cleanse(other.bytes_.data(), kBytes);
  }
  return *this;
}

Key::~Key() { OPENSSL_cleanse(bytes_.data(), kBytes); }

auto ReadKeyFile(const std::string& path) -> llvm::Expected<Key> {
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path);
  if (!file) return KeyFileError(path, llvm::toString(file.takeError()));
  if (file->size() > kMaxKeyFileBytes) return KeyFileError(path, SizeProblem(file->size()));
  std::array<uint8_t, kMaxKeyFileBytes + 1> buffer{};
  size_t size = 0;
  while (size < buffer.size()) {
    ssize_t n = ::read(file->fd(), buffer.data() + size, buffer.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return KeyFileError(path, std::string("cannot read it: ") + std::strerror(errno));
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  std::string problem;
  std::optional<Key> key = KeyOfBytes(llvm::ArrayRef<uint8_t>(buffer.data(), size), problem);
  OPENSSL_cleanse(buffer.data(), buffer.size());
  if (!key) return KeyFileError(path, problem);
  return std::move(*key);
}

}  // namespace avf::crypto
