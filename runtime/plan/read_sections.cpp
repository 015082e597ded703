// The array-shaped and nested sections of plan.json: ranks, groups, stages,
// data, validation, ZeRO, optimizer, checkpoint, init, predicted. Types and
// ranges only; how the entries fit together is validate_*.cpp's job. Compiled as C++17 under
// clang (llvm::json).
#include <fmt/format.h>

#include "plan/read_sections.h"

namespace avf::runtime {

namespace {

using K = plan_format::Key;

auto ReadLocation(const Node& n) -> Location {
  Location loc;
  if (!n.IsObject()) return loc;
  loc.storage = n.String(K::LocationStorage);
  loc.kind = n.Enum<StorageKind>(K::LocationKind);
  loc.path = n.String(K::LocationPath);
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
    rank.rank = r.Int(K::RankRank);
    rank.node = r.Int(K::RankNode);
    rank.gpu = r.Int(K::RankGpu);
    rank.leaf = r.Int(K::RankLeaf);
    rank.tensor = r.Int(K::RankTensor);
    rank.data = r.Int(K::RankData);
    rank.pipeline = r.Int(K::RankPipeline);
  }
}

void ReadGroups(const Node& n, PlanGroups& out) {
  if (!n.IsObject()) return;
  ReadGroupList(n[K::GroupsTensor], out.tensor);
  ReadGroupList(n[K::GroupsData], out.data);
  ReadGroupList(n[K::GroupsPipeline], out.pipeline);
  // The one key that is present only when such groups exist.
  if (Node embedding = n[K::GroupsEmbedding]; embedding.present()) ReadGroupList(embedding, out.embedding);
}

void ReadStages(const Node& n, std::vector<PlanStage>& out) {
  size_t count = n.ArraySize(1);
  out.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Node s = n[i];
    if (!s.IsObject()) continue;
    PlanStage& stage = out[i];
    stage.stage = s.Int(K::StageStage);
    stage.chunk = s.Int(K::StageChunk);
    stage.first_layer = s.Int(K::StageFirstLayer);
    stage.layers = s.Int(K::StageLayers);
    stage.embedding = s.Bool(K::StageEmbedding);
    stage.output = s.Bool(K::StageOutput);
  }
}

void ReadStageParameters(const Node& n, std::vector<int64_t>& out) {
  size_t count = n.ArraySize(1);
  out.resize(count);
  for (size_t i = 0; i < count; ++i) out[i] = n[i].Int(1);
}

void ReadData(const Node& n, PlanData& out) {
  if (!n.IsObject()) return;
  out.name = n.String(K::DataName);
  out.source = ReadLocation(n[K::DataSource]);
  out.staged_to = ReadNullableLocation(n[K::DataStagedTo]);
  out.tokens = n.Int(K::DataTokens);
  out.shards = n.Int(K::DataShards);
  out.format = n.Enum<TokenFormat>(K::DataFormat);
  Node token_bytes = n[K::DataTokenBytes];
  out.token_bytes = token_bytes.Int(2, 4);
  if (out.token_bytes == 3) token_bytes.Report("3 is not a token size (2 or 4 bytes)");
  Node slices = n[K::DataSlices];
  size_t count = slices.ArraySize(1);
  out.slices.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Node s = slices[i];
    if (!s.IsObject()) continue;
    DataSlice& slice = out.slices[i];
    slice.data_rank = s.Int(K::DataSliceDataRank);
    slice.first_sequence = s.Int(K::DataSliceFirstSequence);
    slice.sequences_per_step = s.Int(K::DataSliceSequencesPerStep);
  }
}

void ReadValidation(const Node& n, std::optional<PlanValidation>& out) {
  out.reset();
  if (n.is_null() || !n.IsObject()) return;
  PlanValidation v;
  v.name = n.String(K::ValidationName);
  v.source = ReadLocation(n[K::ValidationSource]);
  v.shards = n.Int(K::ValidationShards);
  v.format = n.Enum<TokenFormat>(K::ValidationFormat);
  Node token_bytes = n[K::ValidationTokenBytes];
  v.token_bytes = token_bytes.Int(2, 4);
  if (v.token_bytes == 3) token_bytes.Report("3 is not a token size (2 or 4 bytes)");
  v.every = n.Int(K::ValidationEvery);
  v.batches = n.Int(K::ValidationBatches);
  out = std::move(v);
}

void ReadZero(const Node& n, PlanZero& out) {
  if (!n.IsObject()) return;
  out.stage = n.Int(K::ZeroStage);
  Node slices = n[K::ZeroSlices];
  size_t count = slices.ArraySize(0);
  out.slices.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Node s = slices[i];
    if (!s.IsObject()) continue;
    out.slices[i] = ZeroSlice{s.Int(K::ZeroSliceStage), s.Int(K::ZeroSliceDataRank), s.Int(K::ZeroSliceFirst),
                              s.Int(K::ZeroSliceCount)};
  }
}

void ReadOptimizer(const Node& n, PlanOptimizer& out) {
  if (!n.IsObject()) return;
  out.kind = n.Enum<OptimizerKind>(K::OptimizerKind);
  out.lr = n.NullableNumber(K::OptimizerLr);
  Node betas = n[K::OptimizerBetas];
  if (!betas.is_null()) {
    size_t count = betas.ArraySize(2);
    if (count > 2) betas.Report(fmt::format("has {} entries, expected 2 (beta1, beta2)", count));
    if (count == 2) out.betas = {{betas[0].Number(0, false, 1), betas[1].Number(0, false, 1)}};
  }
  out.weight_decay = n.NullableNumber(K::OptimizerWeightDecay);
  out.warmup = n.Int(K::OptimizerWarmup);
  out.schedule = n.Enum<LrSchedule>(K::OptimizerSchedule);
}

void ReadCheckpoint(const Node& n, std::optional<PlanCheckpoint>& out) {
  out.reset();
  if (n.is_null() || !n.IsObject()) return;
  PlanCheckpoint c;
  c.every_steps = n.NullableInt(K::CheckpointEverySteps);
  c.every_seconds = n.NullableNumber(K::CheckpointEverySeconds);
  c.dir = ReadNullableLocation(n[K::CheckpointDir]);
  c.export_to = ReadNullableLocation(n[K::CheckpointExport]);
  c.keep = n.NullableInt(K::CheckpointKeep);
  c.async = n.Bool(K::CheckpointAsync);
  if (Node encrypt = n[K::CheckpointEncrypt]; !encrypt.is_null() && encrypt.IsObject()) {
    c.encrypt_secret = encrypt.String(K::EncryptSecret);
  }
  out = std::move(c);
}

void ReadInit(const Node& n, std::optional<Location>& out) { out = ReadNullableLocation(n); }

void ReadPredicted(const Node& n, PlanPredicted& out) {
  if (!n.IsObject()) return;
  out.memory_per_gpu_bytes = n.Int(K::PredictedMemoryPerGpuBytes);
  if (Node m = n[K::PredictedMemoryBreakdown]; m.IsObject()) {
    out.memory_breakdown_bytes = {m.Int(K::MemoryWeights), m.Int(K::MemoryGradients), m.Int(K::MemoryOptimizer),
                                  m.Int(K::MemoryActivations), m.Int(K::MemoryBuffers)};
  }
  out.step_time_s = n.Number(K::PredictedStepTime);
  out.step_time_low_s = n.Number(K::PredictedStepTimeLow);
  out.step_time_high_s = n.Number(K::PredictedStepTimeHigh);
  if (Node t = n[K::PredictedTimeBreakdown]; t.IsObject()) {
    out.time_breakdown_s = {t.Number(K::TimeCompute), t.Number(K::TimeTensorComm), t.Number(K::TimePipelineComm),
                            t.Number(K::TimeBubble),  t.Number(K::TimeDataComm),   t.Number(K::TimeOptimizer)};
  }
  out.tokens_per_s = n.Number(K::PredictedTokensPerS);
  out.tflops_per_gpu = n.Number(K::PredictedTflopsPerGpu);
  out.mfu = n.Number(K::PredictedMfu);
  out.fits = n.Bool(K::PredictedFits);
  out.binding = n.String(K::PredictedBinding);
  if (Node span = n[K::PredictedDataGroupSpan]; span.IsObject()) {
    out.data_group_span_nodes = span.Int(K::SpanNodes);
    out.data_group_span_leaves = span.Int(K::SpanLeaves);
  }
  out.staging_s = n.Number(K::PredictedStagingTime);
  out.checkpoint_s = n.Number(K::PredictedCheckpointTime);
  out.time_to_train_s = n.Number(K::PredictedTimeToTrain);
  out.gpu_hours = n.Number(K::PredictedGpuHours);
  out.cost = n.NullableNumber(K::PredictedCost);
}

void ReadElastic(const Node& n, std::optional<PlanElastic>& out) {
  out.reset();
  if (n.is_null() || !n.IsObject()) return;
  PlanElastic e;
  e.min_nodes = n.Int(K::ElasticMinNodes);
  e.max_nodes = n.Int(K::ElasticMaxNodes);
  Node layouts = n[K::ElasticLayouts];
  size_t count = layouts.ArraySize(1);
  e.layouts.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Node m = layouts[i];
    if (!m.IsObject()) continue;
    PlanElasticLayout& l = e.layouts[i];
    l.nodes = m.Int(K::ElasticNodes);
    l.gpus = m.Int(K::ElasticGpus);
    l.layout.data = m.Int(K::ElasticData);
    l.layout.tensor = m.Int(K::ElasticTensor);
    l.layout.pipeline = m.Int(K::ElasticPipeline);
    l.layout.virtual_stages = m.Int(K::ElasticVirtualStages);
    l.layout.schedule = m.Enum<PipelineSchedule>(K::ElasticSchedule);
    l.layout.zero = m.Int(K::ElasticZero);
    l.layout.micro_batch = m.Int(K::ElasticMicroBatch);
    l.layout.recompute = m.Enum<Recompute>(K::ElasticRecompute);
    l.layout.sequence_parallel = m.Bool(K::ElasticSequenceParallel);
    l.layout.rank_order = std::string(plan_format::kRankOrder);
    l.micro_batches_per_step = m.Int(K::ElasticMicroBatchesPerStep);
    ReadStageParameters(m[K::ElasticChunkLayers], l.chunk_layers);
    ReadStageParameters(m[K::ElasticStageParameters], l.stage_parameters);
    l.memory_per_gpu_bytes = m.Int(K::ElasticMemoryPerGpu);
    if (Node b = m[K::ElasticMemoryBreakdown]; b.IsObject()) {
      l.memory_breakdown_bytes = {b.Int(K::ElasticMemoryWeights), b.Int(K::ElasticMemoryGradients),
                                  b.Int(K::ElasticMemoryOptimizer), b.Int(K::ElasticMemoryActivations),
                                  b.Int(K::ElasticMemoryBuffers)};
    }
    l.step_time_s = m.Number(K::ElasticStepTime);
    if (Node t = m[K::ElasticTimeBreakdown]; t.IsObject()) {
      l.time_breakdown_s = {t.Number(K::ElasticTimeCompute),      t.Number(K::ElasticTimeTensorComm),
                            t.Number(K::ElasticTimePipelineComm), t.Number(K::ElasticTimeBubble),
                            t.Number(K::ElasticTimeDataComm),     t.Number(K::ElasticTimeOptimizer)};
    }
    l.tokens_per_s = m.Number(K::ElasticTokensPerS);
    l.tflops_per_gpu = m.Number(K::ElasticTflopsPerGpu);
    l.mfu = m.Number(K::ElasticMfu);
    l.time_to_train_s = m.Number(K::ElasticTimeToTrain);
  }
  out = std::move(e);
}

}  // namespace avf::runtime
