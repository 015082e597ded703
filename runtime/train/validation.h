// Validation loss (`validation { data; every; batches }`): the mean loss of
// the model, forwards only, over the first `batches` global batches of the
// held-out dataset's windows. Window i of the dataset is tokens i x (T + 1)
// … i x (T + 1) + T (its first T tokens the inputs, its last T the targets,
// as `avf-run checkpoint eval` reads any data), validation batch b holds
// windows b x G … b x G + G − 1 (wrapping round when the data holds fewer),
// and data rank d evaluates its share of each batch like a training step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

#include "data/batches.h"
#include "data/token_reader.h"
#include "parallel/engine.h"
#include "plan/plan.h"

namespace avf::train {

class Validation {
 public:
  // The plan's validation data in `dir` (its shards checked); the rank's
  // share as the plan's data slice `share`.
  static auto Open(const runtime::RunPlan& plan, const std::string& dir, data::BatchShare share)
      -> llvm::Expected<std::unique_ptr<Validation>>;
  // The mean loss over the validation batches; a collective.
  auto Run(parallel::Engine& engine) -> llvm::Expected<double>;
  auto windows() const -> int64_t { return reader_->tokens() / (seq_ + 1); }

 private:
  Validation(std::unique_ptr<data::TokenReader> reader, int64_t seq, int64_t global_batch, int64_t micro,
             int64_t batches, data::BatchShare share)
      : reader_(std::move(reader)),
        seq_(seq),
        global_batch_(global_batch),
        micro_(micro),
        batches_(batches),
        share_(share) {}
  auto Load(int64_t batch, std::vector<data::Batch>& out) -> llvm::Error;

  std::unique_ptr<data::TokenReader> reader_;
  int64_t seq_, global_batch_, micro_, batches_;
  data::BatchShare share_;
  std::vector<uint32_t> tokens_;
};

}  // namespace avf::train
