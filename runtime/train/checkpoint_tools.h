// What `avf-run checkpoint …` does with a checkpoint offline, no training
// run needed (docs/checkpoints.md#tools): inspect it, verify it, convert it
// to another layout, export the model as Hugging Face safetensors, and
// evaluate its loss on held-out tokens.
#pragma once

#include <cstdint>
#include <string>

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "checkpoint/index.h"
#include "crypto/key_file.h"
#include "plan/plan.h"

namespace avf::train {

// `path` is a step directory, or a checkpoint directory (its newest
// committed step): the step directory meant.
auto StepDirectoryOf(const std::string& path) -> llvm::Expected<std::string>;

// The index of `step_dir`, its files' sizes and SHA-256s checked.
auto VerifiedIndex(const std::string& step_dir) -> llvm::Expected<checkpoint::Index>;

// Prints the step, the job, the model, the plan and the data position of a
// verified checkpoint; with `tensors`, every tensor with its shape and chunks.
void PrintInspection(const std::string& step_dir, const checkpoint::Index& index, bool tensors, llvm::raw_ostream& out);

// Rewrites the checkpoint as `plan`'s ranks would have written it (one file
// per rank of the plan), as OUT/step_N.
// `key` (null for a plain checkpoint) opens the files and seals the new ones.
auto Convert(const std::string& step_dir, const checkpoint::Index& index, const runtime::RunPlan& plan,
             const std::string& plan_sha256, const std::string& out_root, const crypto::Key* key) -> llvm::Error;

// The model's parameters in the transformers layout (config.json and
// model.safetensors in `out_dir`), fp32 or bf16.
auto ExportSafetensors(const std::string& step_dir, const checkpoint::Index& index, const std::string& out_dir,
                       bool bf16, const crypto::Key* key) -> llvm::Error;

// The mean loss of the checkpoint's model over the non-overlapping windows of
// seq_len + 1 tokens of `data` (a shard file or a dataset folder): inputs are
// a window's first seq_len tokens, targets its last seq_len. `windows` gets
// how many there were.
auto Evaluate(const std::string& step_dir, const checkpoint::Index& index, const std::string& data,
              const crypto::Key* key, int64_t& windows) -> llvm::Expected<double>;

}  // namespace avf::train
