// Writes token shards (docs/data-format.md): used by `avf-run tokenize` and
// by tests. A shard is written to a temporary name and renamed, so a reader
// never sees half a shard.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

namespace avf::data {

// Every token must fit `token_bytes` (2: below 65,536).
auto WriteShard(const std::string& path, uint32_t token_bytes, const std::vector<uint32_t>& tokens) -> llvm::Error;

}  // namespace avf::data
