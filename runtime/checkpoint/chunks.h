// Between a rank's flat state (its shard of the model, or a ZeRO slice of
// it) and the checkpoint's global tensors: which chunks a rank saves, and
// the values a rank of any layout loads back.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/Support/Error.h>

#include "checkpoint/index.h"
#include "model/config.h"
#include "optim/optimizer.h"

namespace avf::checkpoint {

// Elements [local, local + count) of a part are elements [full, full +
// count) of the full row-major tensor.
struct PartRun {
  int64_t local = 0, full = 0, count = 0;
};
// Elements [first, first + count) of `part` as runs, none crossing a row.
void ForEachRun(const model::TensorPart& part, int64_t first, int64_t count, llvm::function_ref<void(PartRun)> fn);

// What one rank of a layout holds and which of it it saves: the elements of
// `share` (its data rank's ⌊Ψ/D⌋ of the flat buffer, like a ZeRO slice, so
// that replicas split the writing), less the tensors another rank saves
// (those held whole by every tensor rank are saved by tensor rank 0; a tied
// output layer's copy of wte by the stage with the embedding).
struct RankShard {
  const model::ParamLayout* layout = nullptr;
  int64_t tensor_rank = 0;
  bool embedding = true;
  optim::ElementRun share;
};
auto ShareOf(int64_t total, int64_t data_rank, int64_t data_ranks) -> optim::ElementRun;

// One array of a rank's state: `values` are elements `run` of the flat buffer.
struct StateArray {
  StateKind kind = StateKind::Param;
  optim::ElementRun run;
  llvm::ArrayRef<float> values;
};

// A chunk to save: `values` of tensor `tensor`'s chunk (its file and offset
// set as the file is written).
struct PendingChunk {
  size_t tensor = 0;
  Chunk chunk;
  llvm::ArrayRef<float> values;
};
struct SavePlan {
  std::vector<Tensor> tensors;  // without chunks
  std::vector<PendingChunk> chunks;
};
auto PlanSave(const RankShard& shard, const std::vector<StateArray>& arrays) -> SavePlan;

// Random access to a checkpoint's data files.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  // `count` floats of file `file` from byte `offset`.
  virtual auto Read(int64_t file, uint64_t offset, int64_t count, float* out) -> llvm::Error = 0;
};

// The values of elements `run` of `layout`'s flat buffer, of kind `kind`,
// from the checkpoint. Where the chunks were cut like this rank's tensor
// (only ZeRO slices or data ranks differ) its elements are read straight
// from them; otherwise the global tensor is assembled from all of its chunks
// (each element exactly once) and this rank's part copied out, in
// `scratch`'s buffers when given (reused across calls).
struct LoadScratch {
  std::vector<float> full, buffer;
};
auto LoadArray(const Index& index, ChunkSource& source, const model::ParamLayout& layout, StateKind kind,
               optim::ElementRun run, LoadScratch* scratch = nullptr) -> llvm::Expected<std::vector<float>>;

}  // namespace avf::checkpoint
