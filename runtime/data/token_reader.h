// Reads the tokens of one data-parallel rank's slice of a dataset, as the
// plan assigns them (docs/plan-format.md#data): contiguous, the same for
// every tensor and pipeline rank with that data rank, deterministic. The
// reader validates every shard of its slice before training starts, and can
// report and restore its position for resume.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

namespace avf::data {

// The dataset as plan.json describes it: `shards` files in `dir`, `tokens`
// in all, shard i holding ⌊tokens/shards⌋ of them and the last the rest.
// Every token read must be below `vocab`, the model's vocabulary.
struct DatasetLayout {
  std::string dir;
  int64_t tokens = 0;
  int64_t shards = 1;
  uint32_t token_bytes = 2;
  int64_t vocab = 0;
};

// Tokens [first, first + count) of the dataset.
struct TokenSlice {
  int64_t first = 0;
  int64_t count = 0;
};

class TokenReader {
 public:
  // Opens and checks every shard the slice touches: header, token width and
  // count against the layout, file size. Errors name the file.
  static auto Open(const DatasetLayout& layout, TokenSlice slice) -> llvm::Expected<std::unique_ptr<TokenReader>>;
  ~TokenReader();
  TokenReader(const TokenReader&) = delete;
  auto operator=(const TokenReader&) -> TokenReader& = delete;

  // Appends the next `n` tokens of the slice to `out`; at the slice's end it
  // continues from its start (the next epoch). A token id not below the
  // vocabulary is an error naming its shard and offset.
  auto Read(int64_t n, std::vector<uint32_t>& out) -> llvm::Error;
  // Tokens read since the slice's start, modulo its length: what a
  // checkpoint stores, and what Seek restores.
  auto position() const -> int64_t { return position_; }
  auto epoch() const -> int64_t { return epoch_; }
  auto slice() const -> TokenSlice { return slice_; }
  auto Seek(int64_t position, int64_t epoch) -> llvm::Error;

  // The shard that holds dataset token `token`, and the token's index in it.
  static auto Locate(const DatasetLayout& layout, int64_t token) -> std::pair<int64_t, int64_t>;

 private:
  TokenReader(DatasetLayout layout, TokenSlice slice) : layout_(std::move(layout)), slice_(slice) {}
  auto ReadRun(int64_t token, int64_t n, std::vector<uint32_t>& out) -> llvm::Error;
  auto UseShard(int64_t shard) -> llvm::Error;

  DatasetLayout layout_;
  TokenSlice slice_;
  int64_t position_ = 0;
  int64_t epoch_ = 0;
  int64_t open_shard_ = -1;
  int fd_ = -1;
  std::vector<uint8_t> buffer_;
};

auto ShardPath(const DatasetLayout& layout, int64_t shard) -> std::string;

}  // namespace avf::data
