// The order in which a job trains on its dataset: a function of the dataset,
// the global batch and the sequence length only, never of the layout
// (docs/data-format.md#the-order-of-training). Sequence j of the dataset is
// tokens [j x T, j x T + T]: T inputs and the same shifted by one as targets,
// so consecutive sequences share one token and no token is skipped as a
// target (llm.c reads B x T + 1 tokens per batch for the same reason). Global
// batch b holds G consecutive sequences; data rank d of D trains the
// d-th G/D of them, one contiguous run of the shards.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/token_reader.h"

namespace avf::data {

struct Batch {
  std::vector<uint32_t> inputs, targets;  // batch x seq, row-major
};

class SequenceOrder {
 public:
  // An error when the dataset holds less than one global batch.
  static auto Make(int64_t tokens, int64_t seq_len, int64_t global_batch) -> llvm::Expected<SequenceOrder>;

  // Sequences of an epoch: ⌊(N − 1) / T⌋.
  auto sequences() const -> int64_t { return sequences_; }
  // Whole global batches of an epoch; the last sequences that do not fill one
  // are not trained on. Every epoch reads the same batches in the same order.
  auto batches_per_epoch() const -> int64_t { return sequences_ / global_batch_; }
  // The epoch global batch `batch` (0, 1, … counted over the whole run) is in.
  auto epoch(int64_t batch) const -> int64_t { return batch / batches_per_epoch(); }
  // The first sequence of global batch `batch`, counted in its epoch.
  auto first_sequence(int64_t batch) const -> int64_t { return batch % batches_per_epoch() * global_batch_; }
  // The dataset token that sequence `sequence` of an epoch starts at.
  auto first_token(int64_t sequence) const -> int64_t { return sequence * seq_len_; }
  auto seq_len() const -> int64_t { return seq_len_; }
  auto global_batch() const -> int64_t { return global_batch_; }

 private:
  SequenceOrder(int64_t sequences, int64_t seq_len, int64_t global_batch)
      : sequences_(sequences), seq_len_(seq_len), global_batch_(global_batch) {}
  int64_t sequences_, seq_len_, global_batch_;
};

// One data rank's share of every global batch: sequences [first, first +
// count) of it, `first` and `count` from plan.json's data.slices.
struct BatchShare {
  int64_t first = 0, count = 0;
};

class BatchLoader {
 public:
  BatchLoader(std::unique_ptr<TokenReader> reader, SequenceOrder order, BatchShare share)
      : reader_(std::move(reader)), order_(order), share_(share) {}

  // This rank's share of global batch `batch` as micro-batches of `micro`
  // sequences (`count` divides by it), in sequence order.
  auto Load(int64_t batch, int64_t micro, std::vector<Batch>& out) -> llvm::Error;
  auto order() const -> const SequenceOrder& { return order_; }

 private:
  std::unique_ptr<TokenReader> reader_;
  SequenceOrder order_;
  BatchShare share_;
  std::vector<uint32_t> tokens_;
};

}  // namespace avf::data
