#include "data/batches.h"

#include <fmt/format.h>

namespace avf::data {

auto SequenceOrder::Make(int64_t tokens, int64_t seq_len, int64_t global_batch) -> llvm::Expected<SequenceOrder> {
  int64_t sequences = seq_len > 0 && tokens > 0 ? (tokens - 1) / seq_len : 0;
  if (global_batch < 1 || sequences < global_batch) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        fmt::format("the dataset's {} tokens hold {} sequences of seq_len + 1 = {} tokens, fewer than one global "
                    "batch of {}",
                    tokens, sequences, seq_len + 1, global_batch)
            .c_str());
  }
  return SequenceOrder(sequences, seq_len, global_batch);
}

auto BatchLoader::Load(int64_t batch, int64_t micro, std::vector<Batch>& out) -> llvm::Error {
  int64_t seq = order_.seq_len();
  int64_t first = order_.first_token(order_.first_sequence(batch) + share_.first);
  tokens_.clear();
  if (llvm::Error e = reader_->Read(first, share_.count * seq + 1, tokens_)) return e;
  out.resize(static_cast<size_t>(share_.count / micro));
  int64_t n = micro * seq;
  for (size_t m = 0; m < out.size(); ++m) {
    auto begin = tokens_.begin() + static_cast<int64_t>(m) * n;
    out[m].inputs.assign(begin, begin + n);
    out[m].targets.assign(begin + 1, begin + n + 1);
  }
  return llvm::Error::success();
}

}  // namespace avf::data
