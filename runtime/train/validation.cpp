#include "train/validation.h"

#include <fmt/format.h>

namespace avf::train {

auto Validation::Open(const runtime::RunPlan& plan, const std::string& dir, data::BatchShare share)
    -> llvm::Expected<std::unique_ptr<Validation>> {
  const runtime::PlanValidation& v = *plan.validation;
  data::DatasetLayout layout{dir, v.shards, static_cast<uint32_t>(v.token_bytes), plan.model.vocab, {}};
  auto reader = data::TokenReader::Open(layout);
  if (!reader) return reader.takeError();
  int64_t seq = plan.model.seq_len;
  if ((*reader)->tokens() < seq + 1) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        fmt::format("{}: validation dataset `{}` holds {} tokens, fewer than one window of seq_len + 1 = {}", dir,
                    v.name, (*reader)->tokens(), seq + 1)
            .c_str());
  }
  return std::unique_ptr<Validation>(
      new Validation(std::move(*reader), seq, plan.training.global_batch, plan.layout.micro_batch, v.batches, share));
}

// This rank's micro-batches of validation batch `batch`: its windows of it,
// `micro_` at a time.
auto Validation::Load(int64_t batch, std::vector<data::Batch>& out) -> llvm::Error {
  int64_t window = seq_ + 1, count = windows();
  out.resize(static_cast<size_t>(share_.count / micro_));
  for (size_t m = 0; m < out.size(); ++m) {
    data::Batch& b = out[m];
    b.inputs.clear(), b.targets.clear();
    for (int64_t k = 0; k < micro_; ++k) {
      int64_t w = (batch * global_batch_ + share_.first + static_cast<int64_t>(m) * micro_ + k) % count;
      tokens_.clear();
      if (llvm::Error e = reader_->Read(w * window, window, tokens_)) return e;
      b.inputs.insert(b.inputs.end(), tokens_.begin(), tokens_.end() - 1);
      b.targets.insert(b.targets.end(), tokens_.begin() + 1, tokens_.end());
    }
  }
  return llvm::Error::success();
}

auto Validation::Run(parallel::Engine& engine) -> llvm::Expected<double> {
  double sum = 0;
  std::vector<data::Batch> micro_batches;
  for (int64_t b = 0; b < batches_; ++b) {
    if (llvm::Error e = Load(b, micro_batches)) return e;
    llvm::Expected<double> loss = engine.Evaluate(micro_batches);
    if (!loss) return loss.takeError();
    sum += *loss;
  }
  return sum / static_cast<double>(batches_);
}

}  // namespace avf::train
