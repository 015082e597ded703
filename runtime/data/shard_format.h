// The token-shard file format (docs/data-format.md): a 1024-byte header of
// 256 little-endian uint32 words, then the tokens. aviflow's own header holds
// a 64-bit token count, because a shard of a multi-trillion-token corpus
// holds more than 2^31 tokens; llm.c's headers (32-bit count) are read too,
// so its data-preparation scripts can feed avf-run.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <llvm/Support/Error.h>

namespace avf::data {

inline constexpr size_t kHeaderBytes = 1024;
inline constexpr size_t kHeaderWords = kHeaderBytes / 4;
// 'A' 'V' 'F' 'T' as the first four bytes of the file.
inline constexpr uint32_t kMagic = 0x54465641;
inline constexpr uint32_t kVersion = 1;
// llm.c (dev/data/data_common.py): GPT-2 uint16 shards and Llama 3 uint32 shards.
inline constexpr uint32_t kLlmcMagicU16 = 20240520, kLlmcVersionU16 = 1;
inline constexpr uint32_t kLlmcMagicU32 = 20240801, kLlmcVersionU32 = 7;

enum class HeaderKind : uint8_t { Aviflow, Llmc };

struct ShardHeader {
  HeaderKind kind = HeaderKind::Aviflow;
  uint32_t token_bytes = 2;  // 2 (uint16) or 4 (uint32)
  uint64_t tokens = 0;
};

// The header's 1024 bytes in aviflow's format.
auto EncodeHeader(uint32_t token_bytes, uint64_t tokens) -> std::array<uint8_t, kHeaderBytes>;

// Reads a header; `file_size` is checked against the token count, so a
// truncated or padded shard is an error, not a silent short read.
auto DecodeHeader(const std::array<uint8_t, kHeaderBytes>& bytes, uint64_t file_size, const std::string& path)
    -> llvm::Expected<ShardHeader>;

// `shard_000042.bin`: the file name of shard `index`.
auto ShardFileName(int64_t index) -> std::string;

}  // namespace avf::data
