#include "crypto/sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "io/regular_file.h"

namespace avf::crypto {

namespace {

constexpr size_t kFileBlockBytes = size_t{4} << 20;

// Digest contexts fail only when memory runs out, as a std::vector would.
void CheckDigestCall(int ok) {
  if (ok != 1) llvm::report_bad_alloc_error("OpenSSL could not set up a SHA-256 context");
}

auto HexValue(char c) -> int {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

auto FileError(const std::string& path, const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", path.c_str(), why.c_str());
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) CheckDigestCall(0);
  CheckDigestCall(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr));
}

auto Sha256::operator=(Sha256&& other) noexcept -> Sha256& {
  if (this != &other) {
    EVP_MD_CTX_free(ctx_);
    ctx_ = other.ctx_;
    other.ctx_ = nullptr;
  }
  return *this;
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(llvm::ArrayRef<uint8_t> bytes) {
  if (!bytes.empty()) CheckDigestCall(EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()));
}

auto Sha256::Final() -> Digest {
  Digest digest{};
  unsigned int size = 0;
  CheckDigestCall(EVP_DigestFinal_ex(ctx_, digest.data(), &size));
  CheckDigestCall(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr));
  return digest;
}

auto Hex(const Digest& digest) -> std::string {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * digest.size());
  for (uint8_t b : digest) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

auto ParseHex(llvm::StringRef hex) -> std::optional<Digest> {
  Digest digest{};
  if (hex.size() != 2 * digest.size()) return std::nullopt;
  for (size_t i = 0; i < digest.size(); ++i) {
    int high = HexValue(hex[2 * i]), low = HexValue(hex[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    digest[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return digest;
}

auto Sha256File(const std::string& path) -> llvm::Expected<Digest> {
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path);
  if (!file) return FileError(path, llvm::toString(file.takeError()));
  std::vector<uint8_t> block(kFileBlockBytes);
  Sha256 hash;
  while (true) {
    ssize_t n = ::read(file->fd(), block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError(path, std::string("cannot read it: ") + std::strerror(errno));
    if (n == 0) break;
    hash.Update(llvm::ArrayRef<uint8_t>(block.data(), static_cast<size_t>(n)));
  }
  return hash.Final();
}

}  // namespace avf::crypto
