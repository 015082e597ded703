#include "data/shard_format.h"

#include <fmt/format.h>

namespace avf::data {

namespace {

auto Word(const std::array<uint8_t, kHeaderBytes>& b, size_t i) -> uint32_t {
  return static_cast<uint32_t>(b[4 * i]) | static_cast<uint32_t>(b[4 * i + 1]) << 8 |
         static_cast<uint32_t>(b[4 * i + 2]) << 16 | static_cast<uint32_t>(b[4 * i + 3]) << 24;
}

void PutWord(std::array<uint8_t, kHeaderBytes>& b, size_t i, uint32_t v) {
  for (size_t k = 0; k < 4; ++k) b[4 * i + k] = static_cast<uint8_t>(v >> (8 * k));
}

auto Fail(const std::string& path, const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", path.c_str(), why.c_str());
}

auto ReadAviflow(const std::array<uint8_t, kHeaderBytes>& b, const std::string& path) -> llvm::Expected<ShardHeader> {
  uint32_t version = Word(b, 1);
  if (version != kVersion) {
    return Fail(path, fmt::format("token-shard format version {}; this avf-run reads version {}", version, kVersion));
  }
  ShardHeader h;
  h.kind = HeaderKind::Aviflow;
  h.token_bytes = Word(b, 2);
  if (h.token_bytes != 2 && h.token_bytes != 4) {
    return Fail(path, fmt::format("tokens of {} bytes; a shard holds 2-byte or 4-byte tokens", h.token_bytes));
  }
  h.tokens = static_cast<uint64_t>(Word(b, 4)) | static_cast<uint64_t>(Word(b, 5)) << 32;
  return h;
}

auto ReadLlmc(uint32_t magic, const std::array<uint8_t, kHeaderBytes>& b, const std::string& path)
    -> llvm::Expected<ShardHeader> {
  uint32_t want = magic == kLlmcMagicU16 ? kLlmcVersionU16 : kLlmcVersionU32;
  if (Word(b, 1) != want) {
    return Fail(path,
                fmt::format("llm.c shard (magic {}) of version {}; expected version {}", magic, Word(b, 1), want));
  }
  ShardHeader h;
  h.kind = HeaderKind::Llmc;
  h.token_bytes = magic == kLlmcMagicU16 ? 2 : 4;
  h.tokens = Word(b, 2);
  return h;
}

}  // namespace

auto EncodeHeader(uint32_t token_bytes, uint64_t tokens) -> std::array<uint8_t, kHeaderBytes> {
  std::array<uint8_t, kHeaderBytes> b{};
  PutWord(b, 0, kMagic);
  PutWord(b, 1, kVersion);
  PutWord(b, 2, token_bytes);
  PutWord(b, 4, static_cast<uint32_t>(tokens));
  PutWord(b, 5, static_cast<uint32_t>(tokens >> 32));
  return b;
}

auto DecodeHeader(const std::array<uint8_t, kHeaderBytes>& bytes, uint64_t file_size, const std::string& path)
    -> llvm::Expected<ShardHeader> {
  if (file_size < kHeaderBytes) {
    return Fail(path, fmt::format("{} bytes, shorter than the {}-byte shard header", file_size, kHeaderBytes));
  }
  uint32_t magic = Word(bytes, 0);
  llvm::Expected<ShardHeader> h =
      magic == kMagic ? ReadAviflow(bytes, path)
      : magic == kLlmcMagicU16 || magic == kLlmcMagicU32
          ? ReadLlmc(magic, bytes, path)
          : llvm::Expected<ShardHeader>(Fail(
                path, fmt::format("not a token shard (magic 0x{:08x}; aviflow shards start with \"AVFT\")", magic)));
  if (!h) return h.takeError();
  uint64_t payload = file_size - kHeaderBytes;
  bool fits = h->tokens <= payload / h->token_bytes;
  if (!fits || payload != h->tokens * h->token_bytes) {
    std::string need = fits ? fmt::format("{} bytes", h->tokens * h->token_bytes) : "more bytes than that";
    return Fail(path, fmt::format("the header says {} tokens of {} bytes, which need {} after the header, but the file "
                                  "has {} bytes there (truncated or not a shard)",
                                  h->tokens, h->token_bytes, need, payload));
  }
  return h;
}

auto ShardFileName(int64_t index) -> std::string { return fmt::format("shard_{:06d}.bin", index); }

}  // namespace avf::data
