// Checkpoint directories (docs/checkpoints.md): ROOT/step_NNNNNNNN/ holds one
// data file per rank (rank_NNNNN.bin), index.json and COMMITTED. Each rank
// writes its file and its part of the index (rank_NNNNN.part.json) durably;
// once every rank has, rank 0 merges the parts into index.json and then
// writes COMMITTED, each fsynced, so a committed checkpoint's data is on disk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

#include "checkpoint/chunks.h"
#include "checkpoint/index.h"
#include "crypto/key_file.h"
#include "crypto/sealed_stream.h"

namespace avf::checkpoint {

auto StepDir(const std::string& root, int64_t step) -> std::string;
auto RankFileName(int64_t rank) -> std::string;

// Writes rank `rank`'s data file and part of the index into `dir`; with a
// key, the data file is sealed (encrypted and authenticated).
auto WriteRank(const std::string& dir, int64_t rank, const SavePlan& plan, const crypto::Key* key = nullptr)
    -> llvm::Error;
// The id an index records of the key its files are sealed with: 16 hex
// digits of a SHA-256 of the key (it tells keys apart, it reveals nothing of one).
auto KeyId(const crypto::Key& key) -> std::string;
// Whether `key` opens `index`'s files: an error naming the step directory
// when they are sealed and the key is missing or another.
auto CheckKey(const std::string& dir, const Index& index, const crypto::Key* key) -> llvm::Error;
// Rank 0, once every rank's WriteRank returned: `meta` (step, origin, data)
// with the ranks' files and tensors merged, as index.json, then COMMITTED.
auto Commit(const std::string& dir, int64_t ranks, Index meta) -> llvm::Error;

// Every step_N directory under `root`, ascending, with whether it is committed.
struct StepEntry {
  int64_t step = 0;
  bool committed = false;
};
auto ListSteps(const std::string& root) -> llvm::Expected<std::vector<StepEntry>>;
// The index of a committed step directory, checked against the directory:
// its step is the directory's, every data file is there with its size.
auto OpenIndex(const std::string& dir) -> llvm::Expected<Index>;
// The SHA-256 of data file `file` against the index.
auto VerifyFile(const std::string& dir, const Index& index, size_t file) -> llvm::Error;
// Deletes all but the newest `keep` committed checkpoints (and uncommitted
// ones older than the newest committed: a run that crashed mid-save).
auto Prune(const std::string& root, int64_t keep) -> llvm::Error;

// The data files of a step directory, opened as they are read.
// The data files of a step directory, opened as they are read; sealed files
// with `key` (CheckKey first).
class DirectorySource : public ChunkSource {
 public:
  DirectorySource(std::string dir, const Index& index, const crypto::Key* key = nullptr)
      : dir_(std::move(dir)), index_(index), key_(key) {}
  ~DirectorySource() override;
  auto Read(int64_t file, uint64_t offset, int64_t count, float* out) -> llvm::Error override;

 private:
  auto ReadSealed(size_t file, uint64_t offset, int64_t count, float* out) -> llvm::Error;
  std::string dir_;
  const Index& index_;
  const crypto::Key* key_;
  std::vector<int> fds_;
  std::vector<std::unique_ptr<crypto::SealedReader>> sealed_;
};

}  // namespace avf::checkpoint
