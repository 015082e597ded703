// Feeds arbitrary bytes to the token-shard header reader as if they were a
// shard file: the first 1024 bytes (zero-padded when the input is shorter) are
// the header and the input's size is the file's size. Any crash or sanitizer
// report is a bug; a refusal is an llvm::Error.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "data/shard_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::array<uint8_t, avf::data::kHeaderBytes> header{};
  std::copy_n(data, std::min(size, header.size()), header.begin());
  llvm::Expected<avf::data::ShardHeader> h = avf::data::DecodeHeader(header, size, "fuzz.bin");
  if (!h) {
    llvm::consumeError(h.takeError());
    return 0;
  }
  // A header that is accepted describes exactly the bytes after it.
  if (h->tokens * h->token_bytes != size - avf::data::kHeaderBytes) __builtin_trap();
  return 0;
}
