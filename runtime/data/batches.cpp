#include "data/batches.h"

namespace avf::data {

auto BatchLoader::Next(int64_t batch, int64_t seq, Batch& out) -> llvm::Error {
  std::vector<uint32_t> tokens;
  if (!primed_) {
    if (llvm::Error e = reader_->Read(1, tokens)) return e;
    carry_ = tokens.front();
    primed_ = true;
    tokens.clear();
  }
  int64_t n = batch * seq;
  if (llvm::Error e = reader_->Read(n, tokens)) return e;
  out.inputs.resize(static_cast<size_t>(n));
  out.targets.assign(tokens.begin(), tokens.end());
  out.inputs[0] = carry_;
  for (int64_t i = 1; i < n; ++i) out.inputs[static_cast<size_t>(i)] = tokens[static_cast<size_t>(i - 1)];
  carry_ = tokens.back();
  return llvm::Error::success();
}

auto BatchLoader::position() const -> Position {
  Position p{reader_->position(), reader_->epoch()};
  if (!primed_) return p;
  // The carried token was read already: step back over it, across an epoch boundary if need be.
  if (--p.position < 0) {
    p.position += reader_->slice().count;
    --p.epoch;
  }
  return p;
}

auto BatchLoader::Seek(Position p) -> llvm::Error {
  primed_ = false;
  return reader_->Seek(p.position, p.epoch);
}

}  // namespace avf::data
