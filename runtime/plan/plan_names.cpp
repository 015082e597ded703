// The spellings of docs/plan-format.md, in the order of each enum.
#include <algorithm>

#include "plan/enum_names.h"

namespace avf::runtime {

namespace {

// Out-of-range values (a cast from garbage) spell as "?" instead of reading
// past the table.
template <typename E, size_t N>
auto Spell(E v, const char* const (&names)[N]) -> llvm::StringRef {
  static_assert(N == EnumCount<E>::value, "one spelling per value");
  auto i = static_cast<size_t>(v);
  return i < N ? names[i] : "?";
}

}  // namespace

auto Name(Target v) -> llvm::StringRef { return Spell(v, {"kubeflow", "jobset", "slurm"}); }
auto Name(Arch v) -> llvm::StringRef { return Spell(v, {"gpt2", "llama"}); }
auto Name(Precision v) -> llvm::StringRef { return Spell(v, {"bf16", "fp16", "fp32"}); }
auto Name(LengthField v) -> llvm::StringRef { return Spell(v, {"steps", "tokens", "epochs"}); }
auto Name(PipelineSchedule v) -> llvm::StringRef { return Spell(v, {"one_f_one_b", "interleaved", "gpipe"}); }
auto Name(Recompute v) -> llvm::StringRef { return Spell(v, {"none", "selective", "full"}); }
auto Name(TokenFormat v) -> llvm::StringRef { return Spell(v, {"tokens_u16", "tokens_u32"}); }
auto Name(StorageKind v) -> llvm::StringRef {
  return Spell(v, {"ceph", "s3", "minio", "beegfs", "lustre", "nfs", "pvc", "local"});
}
auto Name(OptimizerKind v) -> llvm::StringRef { return Spell(v, {"adamw", "sgd"}); }
auto Name(LrSchedule v) -> llvm::StringRef { return Spell(v, {"cosine", "linear", "constant"}); }

auto RanksPerNode(const RunPlan& plan) -> int64_t {
  auto ranks = static_cast<int64_t>(plan.ranks.size());
  return std::max<int64_t>(std::min(ranks, plan.hardware.gpus_per_node), 1);
}

}  // namespace avf::runtime
