// Micro-batches from a rank's token slice: inputs are B x T consecutive
// tokens and targets the same shifted by one, and the next batch starts
// where this one's targets end, so no token is skipped or read twice as a
// target (llm.c reads B*T+1 tokens per batch for the same reason).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/token_reader.h"

namespace avf::data {

struct Batch {
  std::vector<uint32_t> inputs, targets;  // batch x seq, row-major
};

class BatchLoader {
 public:
  explicit BatchLoader(std::unique_ptr<TokenReader> reader) : reader_(std::move(reader)) {}

  auto Next(int64_t batch, int64_t seq, Batch& out) -> llvm::Error;
  // Where the next batch's first input token is in the slice, and in which
  // epoch: what a checkpoint records and Seek restores.
  struct Position {
    int64_t position = 0;
    int64_t epoch = 0;
  };
  auto position() const -> Position;
  auto Seek(Position p) -> llvm::Error;

 private:
  std::unique_ptr<TokenReader> reader_;
  bool primed_ = false;
  uint32_t carry_ = 0;  // the next input token, read already as the last target
};

}  // namespace avf::data
