// Sizes a plan implies, computed with overflow checks before anything is
// allocated. CheckSizes (part of ValidatePlan) bounds every tensor, buffer
// and total the runtime derives from the plan's values by kMaxPlanCount and
// names the keys of the first that is not; CheckHostMemory bounds what the
// ranks of this host's node hold at the least by the host's memory, so a
// plan that cannot fit gets a message instead of a failed allocation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "plan/plan.h"
#include "plan/problems.h"

namespace avf::runtime {

// 2^50 elements: a thousand times the largest model's parameters, more than
// any machine holds, and small enough that the runtime's 64-bit arithmetic on
// such counts (in bytes, summed over a few buffers) cannot overflow.
inline constexpr int64_t kMaxPlanCount = int64_t{1} << 50;

// The model's shape (heads divide hidden, kv_heads divide heads), then every
// count derived from the plan: embeddings, layer weights, the parameters,
// one micro-batch's logits, attention scores and MLP activations, a step's
// tokens on one data rank, the dataset's bytes, the tokens of one validation,
// each stage's parameters.
void CheckSizes(const RunPlan& plan, Problems& p);

// What one rank holds at the least, in bytes: its parameters, gradients and
// optimizer moments (its ZeRO slice where sharded), one micro-batch's
// attention scores in each of its layers and, on the last stage, the logits,
// and the token ids of the step's micro-batches.
struct RankBytes {
  int64_t weights = 0, gradients = 0, optimizer = 0, activations = 0;
  auto total() const -> int64_t { return weights + gradients + optimizer + activations; }
};
// Only for a plan ValidatePlan accepted, and a rank of it.
auto LeastRankBytes(const RunPlan& plan, int64_t rank) -> RankBytes;

// The ranks on `rank`'s node together against `host_bytes`, the memory this
// host lets the job use (HostMemoryBytes()).
auto CheckHostMemory(const RunPlan& plan, int64_t rank, int64_t host_bytes) -> llvm::Error;

// The least memory limit of a cgroup v2 hierarchy mounted at `mount` on the
// path from the cgroup `path` (the `0::` line of /proc/self/cgroup) up to its
// root (each memory.max, "max" for none), or of a cgroup v1 memory
// controller at `mount`/memory/memory.limit_in_bytes; nullopt when nothing
// limits it.
auto CgroupMemoryLimit(const std::string& mount, const std::string& path) -> std::optional<int64_t>;

// The host's physical memory, or less where this process's cgroup (a
// container's memory limit) caps it.
auto HostMemoryBytes() -> int64_t;

}  // namespace avf::runtime
