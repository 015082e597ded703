#include "data/shard_writer.h"

#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "data/shard_format.h"

namespace avf::data {

namespace {

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto Encode(uint32_t token_bytes, const std::vector<uint32_t>& tokens) -> std::vector<uint8_t> {
  std::vector<uint8_t> bytes(tokens.size() * token_bytes);
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (uint32_t k = 0; k < token_bytes; ++k) bytes[i * token_bytes + k] = static_cast<uint8_t>(tokens[i] >> (8 * k));
  }
  return bytes;
}

}  // namespace

auto WriteShard(const std::string& path, uint32_t token_bytes, const std::vector<uint32_t>& tokens) -> llvm::Error {
  if (token_bytes != 2 && token_bytes != 4)
    return Fail(fmt::format("{}: tokens are 2 or 4 bytes, not {}", path, token_bytes));
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (token_bytes == 2 && tokens[i] > 0xffff) {
      return Fail(fmt::format("{}: token {} is {}, which does not fit 2 bytes; use tokens_u32", path, i, tokens[i]));
    }
  }
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Fail(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
  std::array<uint8_t, kHeaderBytes> header = EncodeHeader(token_bytes, tokens.size());
  std::vector<uint8_t> body = Encode(token_bytes, tokens);
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(body.data(), 1, body.size(), f) == body.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Fail(fmt::format("{}: cannot write: {}", path, why));
  }
  return llvm::Error::success();
}

}  // namespace avf::data
