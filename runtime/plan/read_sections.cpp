// The array-shaped and nested sections of plan.json: ranks, groups, stages,
// data, ZeRO, optimizer, checkpoint, predicted. Types and ranges only; how
// the entries fit together is validate_*.cpp's job. Compiled as C++17 under
// clang (llvm::json).
#include <fmt/format.h>

#include "plan/read_sections.h"

namespace avf::runtime {

namespace {

auto ReadLocation(const Node& n) -> Location {
  Location loc;
  if (!n.IsObject()) return loc;
  loc.storage = n["storage"].String(1);
  loc.kind = n["kind"].Enum<StorageKind>();
  loc.path = n["path"].String(0);
  return loc;
}

auto ReadNullableLocation(const Node& n) -> std::optional<Location> {
  if (n.is_null()) return std::nullopt;
  return ReadLocation(n);
}

// An array of groups, each an array of rank numbers. Membership is checked
// by ValidatePlan against the layout.
void ReadGroupList(const Node& n, std::vector<RankGroup>& out) {
  size_t groups = n.ArraySize(1);
  out.resize(groups);
  for (size_t g = 0; g < groups; ++g) {
    Node group = n[g];
    size_t members = group.ArraySize(1);
    out[g].resize(members);
    for (size_t m = 0; m < members; ++m) out[g][m] = group[m].Int(0);
  }
}

}  // namespace

void ReadRanks(const Node& n, std::vector<PlanRank>& out) {
  size_t count = n.ArraySize(1);
  out.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Node r = n[i];
    if (!r.IsObject()) continue;
    PlanRank& rank = out[i];
    rank.rank = r["rank"].Int(0);
    rank.node = r["node"].Int(0);
    rank.gpu = r["gpu"].Int(0);
    rank.leaf = r["leaf"].Int(0);
    rank.tensor = r["tensor"].Int(0);
    rank.data = r["data"].Int(0);
    rank.pipeline = r["pipeline"].Int(0);
  }
}

void ReadGroups(const Node& n, PlanGroups& out) {
  if (!n.IsObject()) return;
  ReadGroupList(n["tensor"], out.tensor);
  ReadGroupList(n["data"], out.data);
  ReadGroupList(n["pipeline"], out.pipeline);
  // The one key that is present only when such groups exist.
  if (Node embedding = n["embedding"]; embedding.present()) ReadGroupList(embedding, out.embedding);
}

void ReadStages(const Node& n, std::vector<PlanStage>& out) {
  size_t count = n.ArraySize(1);
  out.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Node s = n[i];
    if (!s.IsObject()) continue;
    PlanStage& stage = out[i];
    stage.stage = s["stage"].Int(0);
    stage.chunk = s["chunk"].Int(0);
    stage.first_layer = s["first_layer"].Int(0);
    stage.layers = s["layers"].Int(1);
    stage.embedding = s["embedding"].Bool();
    stage.output = s["output"].Bool();
  }
}

void ReadStageParameters(const Node& n, std::vector<int64_t>& out) {
  size_t count = n.ArraySize(1);
  out.resize(count);
  for (size_t i = 0; i < count; ++i) out[i] = n[i].Int(1);
}

void ReadData(const Node& n, PlanData& out) {
  if (!n.IsObject()) return;
  out.name = n["name"].String(1);
  out.source = ReadLocation(n["source"]);
  out.staged_to = ReadNullableLocation(n["staged_to"]);
  out.tokens = n["tokens"].Int(1);
  out.shards = n["shards"].Int(1);
  out.format = n["format"].Enum<TokenFormat>();
  Node token_bytes = n["token_bytes"];
  out.token_bytes = token_bytes.Int(2, 4);
  if (out.token_bytes == 3) token_bytes.Report("3 is not a token size (2 or 4 bytes)");
  Node slices = n["slices"];
  size_t count = slices.ArraySize(1);
  out.slices.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Node s = slices[i];
    if (!s.IsObject()) continue;
    DataSlice& slice = out.slices[i];
    slice.data_rank = s["data_rank"].Int(0);
    slice.first_token = s["first_token"].Int(0);
    slice.tokens = s["tokens"].Int(1);
    slice.first_shard = s["first_shard"].Int(0);
    slice.last_shard = s["last_shard"].Int(0);
    slice.sequences_per_step = s["sequences_per_step"].Int(1);
  }
}

void ReadZero(const Node& n, PlanZero& out) {
  if (!n.IsObject()) return;
  out.stage = n["stage"].Int(0, 3);
  Node slices = n["slices"];
  size_t count = slices.ArraySize(0);
  out.slices.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Node s = slices[i];
    if (!s.IsObject()) continue;
    out.slices[i] = ZeroSlice{s["stage"].Int(0), s["data_rank"].Int(0), s["first"].Int(0), s["count"].Int(0)};
  }
}

void ReadOptimizer(const Node& n, PlanOptimizer& out) {
  if (!n.IsObject()) return;
  out.kind = n["kind"].Enum<OptimizerKind>();
  out.lr = n["lr"].NullableNumber(0, /*exclusive_min=*/true);
  Node betas = n["betas"];
  if (!betas.is_null()) {
    size_t count = betas.ArraySize(2);
    if (count > 2) betas.Report(fmt::format("has {} entries, expected 2 (beta1, beta2)", count));
    if (count == 2) out.betas = {{betas[0].Number(0, false, 1), betas[1].Number(0, false, 1)}};
  }
  out.weight_decay = n["weight_decay"].NullableNumber(0, false);
  out.warmup = n["warmup"].Int(0);
  out.schedule = n["schedule"].Enum<LrSchedule>();
}

void ReadCheckpoint(const Node& n, std::optional<PlanCheckpoint>& out) {
  out.reset();
  if (n.is_null() || !n.IsObject()) return;
  PlanCheckpoint c;
  c.every_steps = n["every_steps"].NullableInt(1);
  c.every_seconds = n["every_seconds"].NullableNumber(0, true);
  c.dir = ReadNullableLocation(n["dir"]);
  c.export_to = ReadNullableLocation(n["export"]);
  c.keep = n["keep"].NullableInt(1);
  c.async = n["async"].Bool();
  out = std::move(c);
}

void ReadPredicted(const Node& n, PlanPredicted& out) {
  if (!n.IsObject()) return;
  out.memory_per_gpu_bytes = n["memory_per_gpu_bytes"].Int(0);
  if (Node m = n["memory_breakdown_bytes"]; m.IsObject()) {
    out.memory_breakdown_bytes = {m["weights"].Int(0), m["gradients"].Int(0), m["optimizer"].Int(0),
                                  m["activations"].Int(0), m["buffers"].Int(0)};
  }
  out.step_time_s = n["step_time_s"].Number(0, true);
  if (Node t = n["time_breakdown_s"]; t.IsObject()) {
    out.time_breakdown_s = {t["compute"].Number(0, false),       t["tensor_comm"].Number(0, false),
                            t["pipeline_comm"].Number(0, false), t["bubble"].Number(0, false),
                            t["data_comm"].Number(0, false),     t["optimizer"].Number(0, false)};
  }
  out.tokens_per_s = n["tokens_per_s"].Number(0, true);
  out.tflops_per_gpu = n["tflops_per_gpu"].Number(0, false);
  out.mfu = n["mfu"].Number(0, false, 1);
  out.fits = n["fits"].Bool();
  out.binding = n["binding"].String(1);
  if (Node span = n["data_group_span"]; span.IsObject()) {
    out.data_group_span_nodes = span["nodes"].Int(1);
    out.data_group_span_leaves = span["leaves"].Int(1);
  }
  out.time_to_train_s = n["time_to_train_s"].Number(0, false);
  out.gpu_hours = n["gpu_hours"].Number(0, false);
  out.cost = n["cost"].NullableNumber(0, false);
}

}  // namespace avf::runtime
