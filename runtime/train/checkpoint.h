// Checkpoints, one file per rank (not reshardable: a resume needs the same layout):
// DIR/step_NNNNNNNN/rank_NNNNN.bin, committed by a COMMITTED file that rank
// 0 writes after every rank has saved (docs/deploy.md: the export step copies
// only committed checkpoints). Every file has a CRC32, so a torn or corrupted
// checkpoint is refused with a clear error instead of resuming from garbage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

namespace avf::train {

// What one rank needs to resume exactly: its parameters (its shard of the
// model), AdamW moments (of its ZeRO slice: as many as the parameters, or
// fewer) and position in its data slice.
struct RankState {
  int64_t step = 0;  // optimizer steps completed
  int64_t data_position = 0, data_epoch = 0;
  std::vector<float> params, m, v;
};

// The same state where it lives (the engine's and the optimizer's buffers),
// so that saving copies nothing: a checkpoint of a large model must not
// double the process's memory.
struct RankStateView {
  int64_t step = 0;
  int64_t data_position = 0, data_epoch = 0;
  llvm::ArrayRef<float> params, m, v;
};

auto CheckpointDir(const std::string& root, int64_t step) -> std::string;

// Writes the rank's file atomically (a temporary name, then rename),
// streaming the arrays from where they are.
auto SaveRank(const std::string& root, int32_t rank, int32_t world, const RankStateView& state) -> llvm::Error;
auto SaveRank(const std::string& root, int32_t rank, int32_t world, const RankState& state) -> llvm::Error;
// Marks step `step` complete; call once every rank's SaveRank returned.
auto Commit(const std::string& root, int64_t step) -> llvm::Error;
// The newest committed step under `root`, or nullopt when there is none.
auto LatestCommitted(const std::string& root) -> llvm::Expected<std::optional<int64_t>>;
// Reads and checks a rank's file: magic, version, world size, rank, sizes, CRC.
auto LoadRank(const std::string& root, int64_t step, int32_t rank, int32_t world, int64_t params, int64_t moments)
    -> llvm::Expected<RankState>;
// The checks and decoding of LoadRank on the file's bytes; `path` names the
// file in messages.
auto ParseRank(llvm::ArrayRef<uint8_t> bytes, const std::string& path, int32_t rank, int32_t world, int64_t params,
               int64_t moments) -> llvm::Expected<RankState>;
// Deletes all but the newest `keep` committed checkpoints (and uncommitted
// ones older than the newest committed: a run that crashed mid-save).
auto Prune(const std::string& root, int64_t keep) -> llvm::Error;

}  // namespace avf::train
