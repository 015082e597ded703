// Reads tokens of a dataset directory (docs/data-format.md): S shard files
// whose headers, not the plan, say how many tokens each holds. Opening reads
// and checks every header (1 KiB a shard) before a token is read, so a bad
// shard stops the run at its start, named; reads are then sequential runs of
// the shards, in dataset order, on any dataset token.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

namespace avf::data {

// What plan.json says of the dataset: `shards` files in `dir`, tokens of
// `token_bytes` each, every one below `vocab`, the model's vocabulary.
// Instead of the folder's shard_NNNNNN.bin, `files` may name the shards
// (held-out data given as files); token_bytes 0: the first shard's width,
// which every shard must have.
struct DatasetLayout {
  std::string dir;
  int64_t shards = 1;
  uint32_t token_bytes = 2;
  int64_t vocab = 0;
  std::vector<std::string> files;
};

class TokenReader {
 public:
  // Opens every shard and checks its header: magic, version, token width
  // against the layout, and its token count against the file's size. Errors
  // name the file.
  static auto Open(const DatasetLayout& layout) -> llvm::Expected<std::unique_ptr<TokenReader>>;
  ~TokenReader();
  TokenReader(const TokenReader&) = delete;
  auto operator=(const TokenReader&) -> TokenReader& = delete;

  // The dataset's tokens, the sum of the headers' counts.
  auto tokens() const -> int64_t { return shard_ends_.empty() ? 0 : shard_ends_.back(); }
  auto shard_tokens(int64_t shard) const -> int64_t;
  // Appends dataset tokens [first, first + n) to `out`. A token id not below
  // the vocabulary is an error naming its shard and offset.
  auto Read(int64_t first, int64_t n, std::vector<uint32_t>& out) -> llvm::Error;
  // The shard that holds dataset token `token`, and the token's index in it.
  auto Locate(int64_t token) const -> std::pair<int64_t, int64_t>;
  auto token_bytes() const -> uint32_t { return layout_.token_bytes; }

 private:
  explicit TokenReader(DatasetLayout layout) : layout_(std::move(layout)) {}
  auto ReadRun(int64_t shard, int64_t index, int64_t n, std::vector<uint32_t>& out) -> llvm::Error;
  auto UseShard(int64_t shard) -> llvm::Error;

  DatasetLayout layout_;
  std::vector<int64_t> shard_ends_;  // shard i holds tokens [ends[i-1], ends[i])
  std::vector<uint64_t> shard_bytes_;
  int64_t open_shard_ = -1;
  int fd_ = -1;
  std::vector<uint8_t> buffer_;
};

auto ShardPath(const DatasetLayout& layout, int64_t shard) -> std::string;

}  // namespace avf::data
