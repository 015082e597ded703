// The index of a checkpoint (docs/checkpoints.md): what a step directory
// holds, by global tensor name and shape, whatever layout wrote it. Every
// rank writes one data file of fp32 chunks; a chunk is a run of elements of
// the part of a tensor the rank held (model::TensorPart), so a reader with
// any other layout finds each element it needs. The index also names the
// job, the model, the data position and the plan it came from, and the
// SHA-256 of every file; it is written last, and COMMITTED after it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include "model/config.h"

namespace avf::checkpoint {

inline constexpr llvm::StringLiteral kFormatName = "aviflow-checkpoint";
inline constexpr int64_t kFormatVersion = 3;
inline constexpr llvm::StringLiteral kIndexFile = "index.json";
inline constexpr llvm::StringLiteral kCommittedFile = "COMMITTED";
inline constexpr llvm::StringLiteral kCipher = "aes-256-gcm-sealed-1";

// What a checkpoint's tensors are: "param/" + the model's name is the fp32
// parameter (in bf16 training, the master copy), "adam_m/" and "adam_v/"
// AdamW's moments of it.
enum class StateKind : uint8_t { Param, AdamM, AdamV };
inline constexpr StateKind kStateKinds[] = {StateKind::Param, StateKind::AdamM, StateKind::AdamV};
auto Prefix(StateKind kind) -> llvm::StringRef;

// Elements [first, first + count) of `part` (row-major over its rows and
// columns), at byte `offset` of data file `file` as little-endian fp32.
struct Chunk {
  int64_t file = 0;
  uint64_t offset = 0;
  model::TensorPart part;
  int64_t first = 0, count = 0;
};

struct Tensor {
  std::string name;  // "param/h.3.attn.qkv.weight"
  int64_t rows = 0, cols = 0;
  std::vector<Chunk> chunks;
};

struct DataFile {
  std::string name;  // "rank_00003.bin", in the step directory
  uint64_t bytes = 0;
  std::string sha256;  // 64 lowercase hex digits
};

// Who wrote the checkpoint: compared with the job that resumes from it.
struct Origin {
  std::string job;
  model::ModelConfig model;
  std::string precision;  // "fp32", "bf16"
  std::string plan_sha256;
  // The layout that wrote it (informational: any layout may resume).
  int64_t ranks = 1, data = 1, tensor = 1, pipeline = 1, virtual_stages = 1, zero = 0, micro_batch = 1;
  uint64_t init_seed = 0;
};

// Where training is in the data (data/batches.h): `batches` global batches
// trained, so the next one is batch `batches` (its epoch and first sequence).
struct DataPosition {
  std::string dataset;
  int64_t tokens = 0, global_batch = 0, seq_len = 0;
  int64_t batches = 0, epoch = 0, next_sequence = 0;
};

struct Index {
  int64_t step = 0;  // optimizer steps taken
  Origin origin;
  DataPosition data;
  // "" when the data files are plain; else they are sealed (AES-256-GCM,
  // docs/checkpoint-encryption.md) with the key of this id (KeyId), and the
  // chunks' offsets are offsets of the plaintext.
  std::string key_id;
  std::vector<DataFile> files;
  std::vector<Tensor> tensors;
};

auto IndexToJson(const Index& index) -> std::string;
// Parses and checks an index: every field present and in range, every chunk
// inside its file and its tensor, every tensor covered exactly once by its
// chunks' counts. `path` names the file in messages.
auto ParseIndex(llvm::StringRef text, llvm::StringRef path) -> llvm::Expected<Index>;

// A rank's part of an index before the ranks' parts are merged: its file
// and its chunks (whose `file` is the rank).
struct RankPart {
  DataFile file;
  std::vector<Tensor> tensors;
};
auto RankPartToJson(const RankPart& part) -> std::string;
auto ParseRankPart(llvm::StringRef text, llvm::StringRef path) -> llvm::Expected<RankPart>;

auto ArchName(model::Arch arch) -> llvm::StringRef;

}  // namespace avf::checkpoint
