// The runtime's view of plan.json (docs/plan-format.md): flat structs that
// mirror every documented key, read and checked by ReadPlanFile/ParsePlan.
// Nothing here depends on the compiler; avf-run reads the file the compiler
// wrote, as any other reader would. The header stays C++17 (no JSON types)
// because the translation units that use llvm::json are compiled as C++17.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include "plan_format/plan_format.h"

namespace avf::runtime {

// The plan format this reader understands (plan_format/plan_format.h); a
// newer file is refused rather than misread (plan-format.md, Versioning).
inline constexpr int64_t kPlanFormatVersion = plan_format::kFormatVersion;

// A plan of 16k ranks is a few MB; anything past this is not a plan, and
// reading it whole would only exhaust memory.
inline constexpr uint64_t kMaxPlanBytes = uint64_t{256} << 20;

// The most ranks a plan may have: a version-3 plan states its world in a few
// bytes and the reader derives a table row per rank (about 200 bytes with its
// groups), so the count, not the file's size, bounds what reading costs.
inline constexpr int64_t kMaxRanks = int64_t{1} << 21;

// Deeper than any plan (4 levels) by far, shallow enough that neither the
// recursive llvm::json parser nor its destructor can exhaust the stack.
inline constexpr unsigned kMaxJsonDepth = 64;

// Closed enumerations (plan_format/enums.def): a value outside them is an
// error (only fields documented as open, like `predicted.binding`, stay strings).
using plan_format::Arch;
using plan_format::Attention;
using plan_format::LengthField;
using plan_format::LrSchedule;
using plan_format::OptimizerKind;
using plan_format::PipelineSchedule;
using plan_format::Precision;
using plan_format::Recompute;
using plan_format::StorageKind;
using plan_format::Target;
using plan_format::TokenFormat;

// The spelling plan.json uses for each value, for logs and messages.
template <typename E, typename = decltype(plan_format::EnumTraits<E>::kNames)>
auto Name(E v) -> llvm::StringRef {
  std::string_view s = plan_format::Spelling(v);
  return {s.data(), s.size()};
}

// A null in plan.json is an empty optional; every key is always present.
struct PlanJob {
  std::string name;
  std::optional<std::string> source_sha256;
  std::optional<Target> target;
  std::optional<std::string> image;
  std::optional<std::string> k8s_namespace;  // `namespace`
  std::optional<std::string> queue;
  std::optional<std::string> priority;
};

struct PlanModel {
  std::string name;
  Arch arch = Arch::Gpt2;
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, seq_len = 0;
  bool tied_embeddings = false;
  int64_t parameters = 0;
  double flops_per_token = 0;
};

struct PlanHardware {
  std::string cluster, node, gpu;
  std::optional<std::string> network;
  int64_t gpu_memory_bytes = 0;
  double peak_flops = 0;
  int64_t cluster_nodes = 0, nodes = 0, gpus_per_node = 0, leaves = 0;
  // Ranks every node runs: gpus_per_node, or the whole job when it is smaller
  // than one node (the manifests' nprocPerNode, PET_NPROC_PER_NODE).
  int64_t ranks_per_node = 0;
  int64_t nodes_per_leaf = 0;  // 0: one flat switch
  // Leaf switches under one spine block (the middle level of a 3-level fat
  // tree); 0 when not declared, and in a version-2 plan.
  int64_t leaves_per_spine = 0;
  double oversubscription = 1;
  std::optional<double> gpu_hour_price;
  std::string currency;  // ISO 4217 code of the price; empty in a version-2 plan
};

struct PlanTraining {
  Precision precision = Precision::Bf16;
  // What the planner's memory model assumed. The GPU backend's attention
  // never stores the s x s matrix (kernels/attention.cu); the CPU backend
  // keeps its probabilities. Both compute the same, whatever this says.
  Attention attention = Attention::Flash;
  int64_t gpus = 0, global_batch = 0, micro_batch = 0, micro_batches_per_step = 0, tokens_per_step = 0, steps = 0;
  double tokens = 0;
  std::optional<LengthField> length_field;
};

struct PlanLayout {
  int64_t data = 0, tensor = 0, pipeline = 0, virtual_stages = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int64_t zero = 0, micro_batch = 0;
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;
  std::string rank_order;  // always "tensor,data,pipeline" in version 1
};

struct PlanRank {
  int64_t rank = 0, node = 0, gpu = 0, leaf = 0;
  int64_t tensor = 0, data = 0, pipeline = 0;
};

// Ranks in ring order, which is also the group's local rank order.
using RankGroup = std::vector<int64_t>;

struct PlanGroups {
  std::vector<RankGroup> tensor, data, pipeline;
  std::vector<RankGroup> embedding;  // empty when the plan has no `embedding` key
};

struct PlanStage {
  int64_t stage = 0, chunk = 0, first_layer = 0, layers = 0;
  bool embedding = false, output = false;
};

struct Location {
  std::string storage;
  StorageKind kind = StorageKind::Local;
  std::string path;
};

struct DataSlice {
  // Sequences [first_sequence, + sequences_per_step) of every global batch.
  int64_t data_rank = 0, first_sequence = 0, sequences_per_step = 0;
};

struct PlanData {
  std::string name;
  Location source;
  std::optional<Location> staged_to;
  int64_t tokens = 0, shards = 0;
  TokenFormat format = TokenFormat::U16;
  int64_t token_bytes = 2;
  std::vector<DataSlice> slices;  // slices[d] belongs to data rank d
};

// Held-out data: its mean loss over `batches` global batches of its
// sequences is logged every `every` steps.
struct PlanValidation {
  std::string name;
  Location source;
  int64_t shards = 1;
  TokenFormat format = TokenFormat::U16;
  int64_t token_bytes = 2;
  int64_t every = 1, batches = 8;
};

struct ZeroSlice {
  int64_t stage = 0, data_rank = 0, first = 0, count = 0;
};

struct PlanZero {
  int64_t stage = 0;
  std::vector<ZeroSlice> slices;  // stage-major: slices[s * D + d]; empty at stage 0
};

struct PlanOptimizer {
  OptimizerKind kind = OptimizerKind::AdamW;
  std::optional<double> lr;
  std::optional<std::array<double, 2>> betas;
  std::optional<double> weight_decay;
  int64_t warmup = 0;
  LrSchedule schedule = LrSchedule::Constant;
};

struct PlanCheckpoint {
  std::optional<int64_t> every_steps;
  std::optional<double> every_seconds;
  std::optional<Location> dir;
  std::optional<Location> export_to;  // `export`
  std::optional<int64_t> keep;
  bool async = false;
  // `encrypt.secret`: the Secret whose key `key` seals the data files (the
  // key itself reaches avf-run as --checkpoint-key-file, never in the plan).
  std::optional<std::string> encrypt_secret;
};

struct PlanPredicted {
  int64_t memory_per_gpu_bytes = 0;
  struct Memory {
    int64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, buffers = 0;
  } memory_breakdown_bytes;
  double step_time_s = 0;
  double step_time_low_s = 0, step_time_high_s = 0;  // the likely range; 0 in a version-2 plan
  struct Time {
    double compute = 0, tensor_comm = 0, pipeline_comm = 0, bubble = 0, data_comm = 0, optimizer = 0;
  } time_breakdown_s;
  double tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  bool fits = false;
  std::string binding;  // an open set: for people, not for decisions
  int64_t data_group_span_nodes = 0, data_group_span_leaves = 0;
  double staging_s = 0, checkpoint_s = 0;  // in time_to_train_s; 0 in a version-2 plan
  double time_to_train_s = 0, gpu_hours = 0;
  std::optional<double> cost;
};

// One node count of an elastic job (plan.json `elastic.layouts`): the
// layout it trains with there (rank order: the plan's), its micro-batches,
// its stages' layers per chunk (chunk-major) and parameters, and the
// prediction at that count.
struct PlanElasticLayout {
  int64_t nodes = 0, gpus = 0;
  PlanLayout layout;
  int64_t micro_batches_per_step = 0;
  std::vector<int64_t> chunk_layers, stage_parameters;
  int64_t memory_per_gpu_bytes = 0;
  PlanPredicted::Memory memory_breakdown_bytes;
  double step_time_s = 0;
  PlanPredicted::Time time_breakdown_s;
  double tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0, time_to_train_s = 0;
};

// Every node count from min_nodes to max_nodes that has a layout, fewest
// nodes first; the plan's own count is among them with the plan's layout.
struct PlanElastic {
  int64_t min_nodes = 0, max_nodes = 0;
  std::vector<PlanElasticLayout> layouts;
};

struct RunPlan {
  int64_t version = kPlanFormatVersion;  // of the file read; its tables are the same in every version
  PlanJob job;
  PlanModel model;
  PlanHardware hardware;
  PlanTraining training;
  PlanLayout layout;
  std::vector<PlanRank> ranks;  // ranks[i].rank == i
  PlanGroups groups;
  std::vector<PlanStage> stages;  // stage-major: stages[s * C + c]
  std::vector<int64_t> stage_parameters;
  PlanData data;
  std::optional<PlanValidation> validation;
  PlanZero zero;
  PlanOptimizer optimizer;
  std::optional<PlanCheckpoint> checkpoint;
  std::optional<Location> init;  // pretrained weights: a Hugging Face transformers folder
  PlanPredicted predicted;
  std::optional<PlanElastic> elastic;  // null, and absent in a version-2 plan: not elastic
};

// Every problem of a plan that is refused, each formatted as
// `FILE: key.path: message` (or `FILE: message`), the first few of `total`.
class PlanError : public llvm::ErrorInfo<PlanError> {
 public:
  static char ID;
  PlanError(std::vector<std::string> lines, size_t total) : lines_(std::move(lines)), total_(total) {}
  auto lines() const -> const std::vector<std::string>& { return lines_; }
  auto total() const -> size_t { return total_; }
  void log(llvm::raw_ostream& os) const override;
  auto convertToErrorCode() const -> std::error_code override;

 private:
  std::vector<std::string> lines_;
  size_t total_;
};

// The consistency rules of plan-format.md's Validation that execution relies
// on (all but the predicted totals, which only inform people: check_plan.h).
// Every problem is reported, not only the first.
auto ValidatePlan(const RunPlan& plan, llvm::StringRef name = "plan.json") -> llvm::Error;

// A plan that ValidatePlan accepted, read-only: the reader and Of make one,
// and nothing can change it after. The layers that execute a plan take a
// ValidPlan, so none of them checks the plan again; they assert what they
// rely on (programming errors only).
class ValidPlan {
 public:
  static auto Of(RunPlan plan, llvm::StringRef name = "plan.json") -> llvm::Expected<ValidPlan>;
  auto operator*() const -> const RunPlan& { return *plan_; }
  auto operator->() const -> const RunPlan* { return plan_.get(); }

 private:
  explicit ValidPlan(std::shared_ptr<const RunPlan> plan) : plan_(std::move(plan)) {}
  std::shared_ptr<const RunPlan> plan_;  // shared: copies are cheap and all alike
};

// Reads, parses and validates `path`; messages name the file as given.
// Refuses files over max_bytes (also pipes and devices that never end).
auto ReadPlanFile(llvm::StringRef path, uint64_t max_bytes = kMaxPlanBytes) -> llvm::Expected<ValidPlan>;

// A plan read from a file, and the SHA-256 of the exact bytes read (64
// lowercase hex digits): the ranks of a job compare it when they join the
// rendezvous, so that none trains on another plan.json than rank 0's.
struct PlanFile {
  ValidPlan plan;
  std::string sha256;
};
auto ReadPlanFileWithSha256(llvm::StringRef path, uint64_t max_bytes = kMaxPlanBytes) -> llvm::Expected<PlanFile>;

// Parses and validates plan.json text; `name` prefixes every message.
auto ParsePlan(llvm::StringRef text, llvm::StringRef name = "plan.json") -> llvm::Expected<ValidPlan>;

}  // namespace avf::runtime
