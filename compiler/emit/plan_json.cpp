// plan.json: one writer per section, in the order docs/plan-format.md lists
// them. Every key is always written; a value the job leaves out is `null`, so
// the shape of the file never depends on the input (docs/plan.schema.json).
// The rank, group and slice tables of plan::Plan are not written: they follow
// from the layout by plan_format's rules, which built them, and the reader
// derives them (format version 3), so a plan of 100,000 ranks stays small.
#include "emit/plan_json.h"

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "emit/json_writer.h"
#include "emit/plan_fields.h"
#include "plan_format/plan_format.h"

namespace avf::emit {

namespace {

using K = plan_format::Key;
using plan_format::Spell;

// Byte counts are whole numbers; the cost model works in doubles.

// An empty string in JobSpec means "not written": null.
void TextOrNull(JsonWriter& j, std::string_view key, const std::string& v) {
  j.Key(key);
  if (v.empty()) j.Null();
  else j.String(v);
}

void NumberOrNull(JsonWriter& j, std::string_view key, const std::optional<double>& v) {
  j.Key(key);
  if (v) j.Number(*v);
  else j.Null();
}

void IntOrNull(JsonWriter& j, std::string_view key, const std::optional<int64_t>& v) {
  j.Key(key);
  if (v) j.Int(*v);
  else j.Null();
}

// {storage, kind, path}: where a tier keeps something, without the tier's
// endpoint, mount or credentials (the manifests carry those).
void LocationValue(JsonWriter& j, std::string_view key, const std::optional<check::Location>& loc) {
  j.Key(key);
  if (!loc || !loc->valid()) {
    j.Null();
    return;
  }
  j.Object([&] {
    j.Field(Spell(K::LocationStorage), loc->storage);
    j.Field(Spell(K::LocationKind), FormatName(loc->storage_kind));
    j.Field(Spell(K::LocationPath), loc->path);
  });
}

void JobSection(JsonWriter& j, const plan::Plan& plan) {
  const check::JobSpec& s = plan.job;
  j.ObjectField(Spell(K::Job), [&] {
    j.Field(Spell(K::JobName), s.name);
    TextOrNull(j, Spell(K::JobSourceSha256), plan.source_sha256);
    TextOrNull(j, Spell(K::JobTarget), s.target ? std::string(FormatName(*s.target)) : "");
    TextOrNull(j, Spell(K::JobImage), s.deploy.image.value);
    TextOrNull(j, Spell(K::JobNamespace), s.deploy.k8s_namespace.value);
    TextOrNull(j, Spell(K::JobQueue), s.deploy.queue.value);
    TextOrNull(j, Spell(K::JobPriority), s.deploy.priority.value);
  });
}

void ModelSection(JsonWriter& j, const plan::Plan& plan) {
  const cost::ModelShape& m = plan.job.workload.model;
  j.ObjectField(Spell(K::Model), [&] {
    j.Field(Spell(K::ModelName), plan.job.model_name);
    j.Field(Spell(K::ModelArch), FormatName(m.arch));
    j.Field(Spell(K::ModelLayers), m.layers);
    j.Field(Spell(K::ModelHidden), m.hidden);
    j.Field(Spell(K::ModelHeads), m.heads);
    j.Field(Spell(K::ModelKvHeads), m.kv_heads);
    j.Field(Spell(K::ModelFfn), m.ffn);
    j.Field(Spell(K::ModelVocab), m.vocab);
    j.Field(Spell(K::ModelSeqLen), m.seq_len);
    j.Field(Spell(K::ModelTiedEmbeddings), m.tied_embeddings);
    j.Field(Spell(K::ModelParameters), plan.figures.parameters);
    j.NumberField(Spell(K::ModelFlopsPerToken), plan.figures.flops_per_token);
  });
}

void HardwareSection(JsonWriter& j, const plan::Plan& plan) {
  const check::JobSpec& s = plan.job;
  const cost::Hardware& hw = s.hardware;
  j.ObjectField(Spell(K::Hardware), [&] {
    j.Field(Spell(K::HardwareCluster), s.cluster_name);
    j.Field(Spell(K::HardwareNode), s.node_name);
    j.Field(Spell(K::HardwareGpu), s.gpu_name);
    TextOrNull(j, Spell(K::HardwareNetwork), s.network_name);
    j.Field(Spell(K::HardwareGpuMemoryBytes), WholeBytes(hw.gpu_memory));
    j.NumberField(Spell(K::HardwarePeakFlops), hw.peak_flops);
    j.Field(Spell(K::HardwareClusterNodes), hw.nodes);
    j.Field(Spell(K::HardwareNodes), plan.nodes_used);
    j.Field(Spell(K::HardwareGpusPerNode), hw.gpus_per_node);
    j.Field(Spell(K::HardwareRanksPerNode), plan.ranks_per_node);
    j.Field(Spell(K::HardwareLeaves), plan.leaves_used);
    j.Field(Spell(K::HardwareNodesPerLeaf), hw.nodes_per_leaf);
    j.Field(Spell(K::HardwareLeavesPerSpine), hw.leaves_per_spine);
    j.NumberField(Spell(K::HardwareOversubscription), hw.oversubscription);
    NumberOrNull(j, Spell(K::HardwareGpuHourPrice), s.price_per_gpu_hour);
    j.Field(Spell(K::HardwareCurrency), s.currency);
  });
}

void TrainingSection(JsonWriter& j, const plan::Plan& plan) {
  const check::JobSpec& s = plan.job;
  const cost::Workload& w = s.workload;
  j.ObjectField(Spell(K::Training), [&] {
    j.Field(Spell(K::TrainingPrecision), FormatName(w.precision));
    j.Field(Spell(K::TrainingAttention), FormatName(w.attention));
    j.Field(Spell(K::TrainingGpus), w.gpus);
    j.Field(Spell(K::TrainingGlobalBatch), w.global_batch);
    j.Field(Spell(K::TrainingMicroBatch), plan.chosen.layout.micro_batch);
    j.Field(Spell(K::TrainingMicroBatchesPerStep), plan.figures.micro_batches_per_step);
    j.Field(Spell(K::TrainingTokensPerStep), plan.figures.tokens_per_step);
    j.Field(Spell(K::TrainingSteps), plan.totals.steps);
    j.NumberField(Spell(K::TrainingTokens), plan.totals.tokens);
    TextOrNull(j, Spell(K::TrainingLengthField), s.length_field ? std::string(FormatName(*s.length_field)) : "");
  });
}

void LayoutSection(JsonWriter& j, const plan::Plan& plan) {
  LayoutField(j, plan.chosen.layout, [&] { j.Field(Spell(K::LayoutRankOrder), plan_format::kRankOrder); });
}

void StagesSection(JsonWriter& j, const plan::Plan& plan) {
  j.ArrayField(Spell(K::Stages), [&] {
    for (const plan::StageChunk& c : plan.stages) {
      j.Object([&] {
        j.Field(Spell(K::StageStage), c.stage);
        j.Field(Spell(K::StageChunk), c.chunk);
        j.Field(Spell(K::StageFirstLayer), c.first_layer);
        j.Field(Spell(K::StageLayers), c.layers);
        j.Field(Spell(K::StageEmbedding), c.embedding);
        j.Field(Spell(K::StageOutput), c.output);
      });
    }
  });
  j.ArrayField(Spell(K::StageParameters), [&] {
    for (int64_t params : plan.stage_params) j.Int(params);
  });
}

void DataSection(JsonWriter& j, const plan::Plan& plan) {
  const check::DatasetSpec& ds = plan.job.dataset;
  j.ObjectField(Spell(K::Data), [&] {
    j.Field(Spell(K::DataName), ds.name);
    LocationValue(j, Spell(K::DataSource), ds.source);
    LocationValue(j, Spell(K::DataStagedTo), ds.stage_to);
    j.Field(Spell(K::DataTokens), ds.tokens);
    j.Field(Spell(K::DataShards), ds.shards);
    j.Field(Spell(K::Format), FormatName(ds.format));
    j.Field(Spell(K::DataTokenBytes), ds.token_bytes);
  });
}

void ValidationSection(JsonWriter& j, const plan::Plan& plan) {
  const std::optional<check::ValidationSpec>& v = plan.job.validation;
  j.Key(Spell(K::Validation));
  if (!v) {
    j.Null();
    return;
  }
  j.Object([&] {
    j.Field(Spell(K::ValidationName), v->dataset.name);
    LocationValue(j, Spell(K::ValidationSource), v->dataset.source);
    j.Field(Spell(K::ValidationShards), v->dataset.shards);
    j.Field(Spell(K::ValidationFormat), FormatName(v->dataset.format));
    j.Field(Spell(K::ValidationTokenBytes), v->dataset.token_bytes);
    j.Field(Spell(K::ValidationEvery), v->every);
    j.Field(Spell(K::ValidationBatches), v->batches);
  });
}

void ZeroSection(JsonWriter& j, const plan::Plan& plan) {
  j.ObjectField(Spell(K::Zero), [&] { j.Field(Spell(K::ZeroStage), plan.chosen.layout.zero); });
}

void OptimizerSection(JsonWriter& j, const plan::Plan& plan) {
  const check::OptimizerSpec& o = plan.job.optimizer;
  j.ObjectField(Spell(K::Optimizer), [&] {
    j.Field(Spell(K::OptimizerKind), FormatName(o.kind));
    NumberOrNull(j, Spell(K::OptimizerLr), o.lr);
    j.Key(Spell(K::OptimizerBetas));
    if (o.betas) {
      j.Array([&] {
        j.Number(o.betas->first);
        j.Number(o.betas->second);
      });
    } else {
      j.Null();
    }
    NumberOrNull(j, Spell(K::OptimizerWeightDecay), o.weight_decay);
    j.Field(Spell(K::OptimizerWarmup), o.warmup);
    j.Field(Spell(K::OptimizerSchedule), FormatName(o.schedule));
  });
}

void CheckpointSection(JsonWriter& j, const plan::Plan& plan) {
  const check::CheckpointSpec& c = plan.job.checkpoint;
  j.Key(Spell(K::Checkpoint));
  if (!c.enabled) {
    j.Null();
    return;
  }
  j.Object([&] {
    IntOrNull(j, Spell(K::CheckpointEverySteps), c.every_steps);
    NumberOrNull(j, Spell(K::CheckpointEverySeconds), c.every_seconds);
    LocationValue(j, Spell(K::CheckpointDir), c.dir);
    LocationValue(j, Spell(K::CheckpointExport), c.export_to);
    IntOrNull(j, Spell(K::CheckpointKeep), c.keep);
    j.Field(Spell(K::CheckpointAsync), c.async);
    // The Secret's name only: the key reaches avf-run as a file.
    j.Key(Spell(K::CheckpointEncrypt));
    if (c.encrypt_secret.empty()) j.Null();
    else j.Object([&] { j.Field(Spell(K::EncryptSecret), c.encrypt_secret); });
  });
}

void PredictedBreakdowns(JsonWriter& j, const cost::Prediction& p) {
  MemoryFields(j, p);
  j.NumberField(Spell(K::PredictedStepTime), p.step_time);
  j.NumberField(Spell(K::PredictedStepTimeLow), p.step_time_low);
  j.NumberField(Spell(K::PredictedStepTimeHigh), p.step_time_high);
  j.ObjectField(Spell(K::PredictedTimeBreakdown), [&] {
    j.NumberField(Spell(K::TimeCompute), p.time.compute);
    j.NumberField(Spell(K::TimeTensorComm), p.time.tensor_comm);
    j.NumberField(Spell(K::TimePipelineComm), p.time.pipeline_comm);
    j.NumberField(Spell(K::TimeBubble), p.time.bubble);
    j.NumberField(Spell(K::TimeDataComm), p.time.data_comm);
    j.NumberField(Spell(K::TimeOptimizer), p.time.optimizer);
  });
}

void PredictedSection(JsonWriter& j, const plan::Plan& plan) {
  const cost::Prediction& p = plan.chosen.prediction;
  const plan::Totals& t = plan.totals;
  j.ObjectField(Spell(K::Predicted), [&] {
    PredictedBreakdowns(j, p);
    j.NumberField(Spell(K::PredictedTokensPerS), p.tokens_per_s);
    j.NumberField(Spell(K::PredictedTflopsPerGpu), p.tflops_per_gpu);
    j.NumberField(Spell(K::PredictedMfu), p.mfu);
    j.Field(Spell(K::PredictedFits), p.fits);
    j.Field(Spell(K::PredictedBinding), plan.chosen.binding);
    j.ObjectField(Spell(K::PredictedDataGroupSpan), [&] {
      j.Field(Spell(K::SpanNodes), p.data_span.nodes);
      j.Field(Spell(K::SpanLeaves), p.data_span.leaves);
    });
    j.NumberField(Spell(K::PredictedStagingTime), t.staging ? t.staging->seconds : 0);
    j.NumberField(Spell(K::PredictedCheckpointTime), t.checkpoints ? t.checkpoints->seconds : 0);
    j.NumberField(Spell(K::PredictedTimeToTrain), t.seconds);
    j.NumberField(Spell(K::PredictedGpuHours), t.gpu_hours);
    NumberOrNull(j, Spell(K::PredictedCost), t.cost);
  });
}

void ElasticLayoutObject(JsonWriter& j, const plan::ElasticLayout& e, int64_t global_batch) {
  const cost::Layout& l = e.candidate.layout;
  const cost::Prediction& p = e.candidate.prediction;
  j.Object([&] {
    j.Field(Spell(K::ElasticNodes), e.nodes);
    j.Field(Spell(K::ElasticGpus), e.gpus);
    j.Field(Spell(K::ElasticData), l.data);
    j.Field(Spell(K::ElasticTensor), l.tensor);
    j.Field(Spell(K::ElasticPipeline), l.pipeline);
    j.Field(Spell(K::ElasticVirtualStages), l.virtual_stages);
    j.Field(Spell(K::ElasticSchedule), FormatName(l.schedule));
    j.Field(Spell(K::ElasticZero), l.zero);
    j.Field(Spell(K::ElasticMicroBatch), l.micro_batch);
    j.Field(Spell(K::ElasticMicroBatchesPerStep), global_batch / (l.data * l.micro_batch));
    j.Field(Spell(K::ElasticRecompute), FormatName(l.recompute));
    j.Field(Spell(K::ElasticSequenceParallel), l.sequence_parallel);
    j.ArrayField(Spell(K::ElasticChunkLayers), [&] {
      for (int64_t layers : e.chunk_layers) j.Int(layers);
    });
    j.ArrayField(Spell(K::ElasticStageParameters), [&] {
      for (int64_t params : e.stage_params) j.Int(params);
    });
    j.Field(Spell(K::ElasticMemoryPerGpu), WholeBytes(p.memory_per_gpu));
    j.ObjectField(Spell(K::ElasticMemoryBreakdown), [&] {
      j.Field(Spell(K::ElasticMemoryWeights), WholeBytes(p.memory.weights));
      j.Field(Spell(K::ElasticMemoryGradients), WholeBytes(p.memory.gradients));
      j.Field(Spell(K::ElasticMemoryOptimizer), WholeBytes(p.memory.optimizer));
      j.Field(Spell(K::ElasticMemoryActivations), WholeBytes(p.memory.activations));
      j.Field(Spell(K::ElasticMemoryBuffers), WholeBytes(p.memory.buffers));
    });
    j.NumberField(Spell(K::ElasticStepTime), p.step_time);
    j.ObjectField(Spell(K::ElasticTimeBreakdown), [&] {
      j.NumberField(Spell(K::ElasticTimeCompute), p.time.compute);
      j.NumberField(Spell(K::ElasticTimeTensorComm), p.time.tensor_comm);
      j.NumberField(Spell(K::ElasticTimePipelineComm), p.time.pipeline_comm);
      j.NumberField(Spell(K::ElasticTimeBubble), p.time.bubble);
      j.NumberField(Spell(K::ElasticTimeDataComm), p.time.data_comm);
      j.NumberField(Spell(K::ElasticTimeOptimizer), p.time.optimizer);
    });
    j.NumberField(Spell(K::ElasticTokensPerS), p.tokens_per_s);
    j.NumberField(Spell(K::ElasticTflopsPerGpu), p.tflops_per_gpu);
    j.NumberField(Spell(K::ElasticMfu), p.mfu);
    j.NumberField(Spell(K::ElasticTimeToTrain), e.seconds);
  });
}

// null, or every node count of an elastic job with its layout.
void ElasticSection(JsonWriter& j, const plan::Plan& plan) {
  j.Key(Spell(K::Elastic));
  if (!plan.elastic) {
    j.Null();
    return;
  }
  j.Object([&] {
    j.Field(Spell(K::ElasticMinNodes), plan.elastic->min_nodes);
    j.Field(Spell(K::ElasticMaxNodes), plan.elastic->max_nodes);
    j.ArrayField(Spell(K::ElasticLayouts), [&] {
      for (const plan::ElasticLayout& e : plan.elastic->layouts) {
        ElasticLayoutObject(j, e, plan.job.workload.global_batch);
      }
    });
  });
}

}  // namespace

void WritePlanJson(const plan::Plan& plan, llvm::raw_ostream& out) {
  {
    JsonWriter j(out, 2);
    j.Object([&] {
      j.Field(Spell(K::Format), plan_format::kFormatName);
      j.Field(Spell(K::Version), plan_format::kFormatVersion);
      JobSection(j, plan);
      ModelSection(j, plan);
      HardwareSection(j, plan);
      TrainingSection(j, plan);
      LayoutSection(j, plan);
      StagesSection(j, plan);
      DataSection(j, plan);
      ValidationSection(j, plan);
      ZeroSection(j, plan);
      OptimizerSection(j, plan);
      CheckpointSection(j, plan);
      LocationValue(j, Spell(K::Init), plan.job.init);
      PredictedSection(j, plan);
      ElasticSection(j, plan);
    });
  }
  out << "\n";
}

}  // namespace avf::emit
