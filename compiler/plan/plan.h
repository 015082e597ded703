// Phase 6 output: the plan of one job. Flat tables with integer ids (ranks,
// nodes, stages, data ranks), so emitters and the runtime read it as rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/job_spec.h"
#include "cost/predict.h"
#include "plan/overheads.h"

namespace avf::plan {

// One evaluated layout.
struct Candidate {
  cost::Layout layout;
  cost::Prediction prediction;
  std::string binding;  // what limits it: "memory 97%", "pipeline bubble 18%", "compute"
};

// Rank r sits on node r / gpus_per_node at GPU r % gpus_per_node; its
// coordinates follow Megatron's order: tensor fastest, then data, then pipeline.
struct Rank {
  int32_t rank = 0;
  int32_t node = 0;  // index among the nodes this job uses
  int32_t gpu = 0;   // local GPU index on that node
  int32_t leaf = 0;  // leaf switch index among the leaves this job uses
  int32_t tensor = 0;
  int32_t data = 0;
  int32_t pipeline = 0;
};

enum class GroupKind : uint8_t { Tensor, Data, Pipeline, Embedding };
auto Name(GroupKind kind) -> std::string_view;

struct Group {
  GroupKind kind;
  int32_t index = 0;           // among groups of its kind
  std::vector<int32_t> ranks;  // in ring order
};

// Model chunk `chunk` of pipeline stage `stage` holds layers
// [first_layer, first_layer + layers).
struct StageChunk {
  int32_t stage = 0;
  int32_t chunk = 0;
  int64_t first_layer = 0;
  int64_t layers = 0;
  bool embedding = false;  // holds the token embedding (first stage)
  bool output = false;     // holds the final norm and output projection (last stage)
};

// What data-parallel rank `data_rank` trains on: sequences [first_sequence,
// + sequences_per_step) of every global batch (docs/data-format.md).
struct DataSlice {
  int32_t data_rank = 0;
  int64_t first_sequence = 0;
  int64_t sequences_per_step = 0;
};

// ZeRO: data rank `data_rank` of pipeline stage `stage` owns elements
// [first, first + count) of that stage's flat parameter buffer (each tensor
// rank splits its own shard the same way).
struct ZeroSlice {
  int32_t stage = 0;
  int32_t data_rank = 0;
  int64_t first = 0;
  int64_t count = 0;
};

// The time to train is the steps' time plus the overheads around them
// (plan/overheads.h); `seconds_low`..`seconds_high` is its likely range, the
// steps at the step time's likely range.
struct Totals {
  int64_t steps = 0;
  double tokens = 0;
  double step_seconds = 0;  // steps x step time
  std::optional<StagingTime> staging;
  std::optional<CheckpointTime> checkpoints;
  double seconds = 0;  // time to train: steps, staging and checkpoints
  double seconds_low = 0;
  double seconds_high = 0;
  double gpu_hours = 0;
  std::optional<double> cost;  // gpu_hours x cluster.gpu_hour_price
  std::string currency;        // of the price and the cost (cluster.currency)
};

// Figures of the job under the chosen layout that the emitters print as
// they are (plan.json's model and training sections, the table's header).
struct Figures {
  int64_t parameters = 0;              // the whole model's
  double flops_per_token = 0;          // training FLOPs per token
  int64_t micro_batches_per_step = 0;  // per data rank
  int64_t tokens_per_step = 0;         // global batch x seq_len
};

// One node count of an elastic job and the layout it trains with there:
// the job's own global batch and data order, its fixed parallel fields,
// `data` following from the GPUs, the rest found by the same `auto` search.
struct ElasticLayout {
  int64_t nodes = 0;
  int64_t gpus = 0;
  Candidate candidate;
  double seconds = 0;  // time to train every step at this count, with the job's overheads
  // What its stages hold: layers per model chunk (chunk-major, as
  // Plan::stages) and one tensor rank's parameters per stage.
  std::vector<int64_t> chunk_layers;
  std::vector<int64_t> stage_params;
};

// Every count of `elastic { min_nodes; max_nodes }` that has a layout,
// fewest nodes first; the job's own count is among them.
struct ElasticFamily {
  int64_t min_nodes = 0;
  int64_t max_nodes = 0;
  std::vector<ElasticLayout> layouts;
};

struct Plan {
  check::JobSpec job;
  Figures figures;
  Candidate chosen;
  std::vector<Candidate> alternatives;  // best of the whole space, chosen excluded
  // The fastest layout of the whole space after the chosen one, whatever
  // `alternatives` holds; none when the whole space was not searched.
  std::optional<Candidate> runner_up;
  // Layouts left out of `alternatives` because their predicted step time and
  // memory equal those of a layout shown before them (TiedWith).
  int64_t tied_left_out = 0;
  int64_t candidates_evaluated = 0;
  int64_t nodes_used = 0;
  int64_t ranks_per_node = 0;  // every node runs this many ranks (plan_format::RanksPerNode)
  int64_t leaves_used = 0;
  std::vector<Rank> ranks;
  std::vector<Group> groups;
  std::vector<StageChunk> stages;
  std::vector<DataSlice> data;
  std::vector<ZeroSlice> zero;
  std::vector<int64_t> stage_params;  // parameters of one tensor rank's shard, per stage
  Totals totals;
  std::optional<ElasticFamily> elastic;
  std::string source_sha256;  // of every file the job was compiled from
};

}  // namespace avf::plan
