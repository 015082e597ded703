// plan.json: one writer per section, in the order docs/plan-format.md lists
// them. Every key is always written; a value the job leaves out is `null`, so
// the shape of the file never depends on the input (docs/plan.schema.json).
#include "emit/plan_json.h"

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "emit/json_writer.h"
#include "emit/plan_fields.h"

namespace avf::emit {

namespace {

// Bumped only by a change a version-1 reader could misread: a key removed or
// renamed, a type, unit or meaning changed. New keys keep the version.
constexpr int64_t kPlanFormatVersion = 1;

// The Megatron order the rank coordinates follow, fastest axis first.
constexpr std::string_view kRankOrder = "tensor,data,pipeline";

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
    j.Field("storage", loc->storage);
    j.Field("kind", Name(loc->storage_kind));
    j.Field("path", loc->path);
  });
}

void JobSection(JsonWriter& j, const plan::Plan& plan) {
  const check::JobSpec& s = plan.job;
  j.ObjectField("job", [&] {
    j.Field("name", s.name);
    TextOrNull(j, "source_sha256", plan.source_sha256);
    TextOrNull(j, "target", s.target ? std::string(Name(*s.target)) : "");
    TextOrNull(j, "image", s.deploy.image.value);
    TextOrNull(j, "namespace", s.deploy.k8s_namespace.value);
    TextOrNull(j, "queue", s.deploy.queue.value);
    TextOrNull(j, "priority", s.deploy.priority.value);
  });
}

void ModelSection(JsonWriter& j, const plan::Plan& plan) {
  const cost::ModelShape& m = plan.job.workload.model;
  j.ObjectField("model", [&] {
    j.Field("name", plan.job.model_name);
    j.Field("arch", cost::Name(m.arch));
    j.Field("layers", m.layers);
    j.Field("hidden", m.hidden);
    j.Field("heads", m.heads);
    j.Field("kv_heads", m.kv_heads);
    j.Field("ffn", m.ffn);
    j.Field("vocab", m.vocab);
    j.Field("seq_len", m.seq_len);
    j.Field("tied_embeddings", m.tied_embeddings);
    j.Field("parameters", plan.figures.parameters);
    j.NumberField("flops_per_token", plan.figures.flops_per_token);
  });
}

void HardwareSection(JsonWriter& j, const plan::Plan& plan) {
  const check::JobSpec& s = plan.job;
  const cost::Hardware& hw = s.hardware;
  j.ObjectField("hardware", [&] {
    j.Field("cluster", s.cluster_name);
    j.Field("node", s.node_name);
    j.Field("gpu", s.gpu_name);
    TextOrNull(j, "network", s.network_name);
    j.Field("gpu_memory_bytes", WholeBytes(hw.gpu_memory));
    j.NumberField("peak_flops", hw.peak_flops);
    j.Field("cluster_nodes", hw.nodes);
    j.Field("nodes", plan.nodes_used);
    j.Field("gpus_per_node", hw.gpus_per_node);
    j.Field("leaves", plan.leaves_used);
    j.Field("nodes_per_leaf", hw.nodes_per_leaf);
    j.NumberField("oversubscription", hw.oversubscription);
    NumberOrNull(j, "gpu_hour_price", s.price_per_gpu_hour);
  });
}

void TrainingSection(JsonWriter& j, const plan::Plan& plan) {
  const check::JobSpec& s = plan.job;
  const cost::Workload& w = s.workload;
  j.ObjectField("training", [&] {
    j.Field("precision", cost::Name(w.precision));
    j.Field("gpus", w.gpus);
    j.Field("global_batch", w.global_batch);
    j.Field("micro_batch", plan.chosen.layout.micro_batch);
    j.Field("micro_batches_per_step", plan.figures.micro_batches_per_step);
    j.Field("tokens_per_step", plan.figures.tokens_per_step);
    j.Field("steps", plan.totals.steps);
    j.NumberField("tokens", plan.totals.tokens);
    TextOrNull(j, "length_field", s.length_field ? std::string(Name(*s.length_field)) : "");
  });
}

void LayoutSection(JsonWriter& j, const plan::Plan& plan) {
  LayoutField(j, plan.chosen.layout, [&] { j.Field("rank_order", kRankOrder); });
}

void RanksSection(JsonWriter& j, const plan::Plan& plan) {
  j.ArrayField("ranks", [&] {
    for (const plan::Rank& r : plan.ranks) {
      j.Object([&] {
        j.Field("rank", r.rank);
        j.Field("node", r.node);
        j.Field("gpu", r.gpu);
        j.Field("leaf", r.leaf);
        j.Field("tensor", r.tensor);
        j.Field("data", r.data);
        j.Field("pipeline", r.pipeline);
      });
    }
  });
}

// The groups of one kind, by index, each a list of ranks in ring order.
void GroupList(JsonWriter& j, const plan::Plan& plan, plan::GroupKind kind) {
  j.ArrayField(plan::Name(kind), [&] {
    for (const plan::Group& g : plan.groups) {
      if (g.kind != kind) continue;
      j.Array([&] {
        for (int32_t rank : g.ranks) j.Int(rank);
      });
    }
  });
}

void GroupsSection(JsonWriter& j, const plan::Plan& plan) {
  bool embedding = false;
  for (const plan::Group& g : plan.groups) embedding = embedding || g.kind == plan::GroupKind::Embedding;
  j.ObjectField("groups", [&] {
    GroupList(j, plan, plan::GroupKind::Tensor);
    GroupList(j, plan, plan::GroupKind::Data);
    GroupList(j, plan, plan::GroupKind::Pipeline);
    // Only tied embeddings split over several stages need this group.
    if (embedding) GroupList(j, plan, plan::GroupKind::Embedding);
  });
}

void StagesSection(JsonWriter& j, const plan::Plan& plan) {
  j.ArrayField("stages", [&] {
    for (const plan::StageChunk& c : plan.stages) {
      j.Object([&] {
        j.Field("stage", c.stage);
        j.Field("chunk", c.chunk);
        j.Field("first_layer", c.first_layer);
        j.Field("layers", c.layers);
        j.Field("embedding", c.embedding);
        j.Field("output", c.output);
      });
    }
  });
  j.ArrayField("stage_parameters", [&] {
    for (int64_t params : plan.stage_params) j.Int(params);
  });
}

void DataSlices(JsonWriter& j, const plan::Plan& plan) {
  j.ArrayField("slices", [&] {
    for (const plan::DataSlice& d : plan.data) {
      j.Object([&] {
        j.Field("data_rank", d.data_rank);
        j.Field("first_token", d.first_token);
        j.Field("tokens", d.tokens);
        j.Field("first_shard", d.first_shard);
        j.Field("last_shard", d.last_shard);
        j.Field("sequences_per_step", d.sequences_per_step);
      });
    }
  });
}

void DataSection(JsonWriter& j, const plan::Plan& plan) {
  const check::DatasetSpec& ds = plan.job.dataset;
  j.ObjectField("data", [&] {
    j.Field("name", ds.name);
    LocationValue(j, "source", ds.source);
    LocationValue(j, "staged_to", ds.stage_to);
    j.Field("tokens", ds.tokens);
    j.Field("shards", ds.shards);
    j.Field("format", Name(ds.format));
    j.Field("token_bytes", ds.token_bytes);
    DataSlices(j, plan);
  });
}

void ZeroSection(JsonWriter& j, const plan::Plan& plan) {
  j.ObjectField("zero", [&] {
    j.Field("stage", plan.chosen.layout.zero);
    j.ArrayField("slices", [&] {
      for (const plan::ZeroSlice& z : plan.zero) {
        j.Object([&] {
          j.Field("stage", z.stage);
          j.Field("data_rank", z.data_rank);
          j.Field("first", z.first);
          j.Field("count", z.count);
        });
      }
    });
  });
}

void OptimizerSection(JsonWriter& j, const plan::Plan& plan) {
  const check::OptimizerSpec& o = plan.job.optimizer;
  j.ObjectField("optimizer", [&] {
    j.Field("kind", cost::Name(o.kind));
    NumberOrNull(j, "lr", o.lr);
    j.Key("betas");
    if (o.betas) {
      j.Array([&] {
        j.Number(o.betas->first);
        j.Number(o.betas->second);
      });
    } else {
      j.Null();
    }
    NumberOrNull(j, "weight_decay", o.weight_decay);
    j.Field("warmup", o.warmup);
    j.Field("schedule", Name(o.schedule));
  });
}

void CheckpointSection(JsonWriter& j, const plan::Plan& plan) {
  const check::CheckpointSpec& c = plan.job.checkpoint;
  j.Key("checkpoint");
  if (!c.enabled) {
    j.Null();
    return;
  }
  j.Object([&] {
    IntOrNull(j, "every_steps", c.every_steps);
    NumberOrNull(j, "every_seconds", c.every_seconds);
    LocationValue(j, "dir", c.dir);
    LocationValue(j, "export", c.export_to);
    IntOrNull(j, "keep", c.keep);
    j.Field("async", c.async);
  });
}

void PredictedBreakdowns(JsonWriter& j, const cost::Prediction& p) {
  MemoryFields(j, p);
  j.NumberField("step_time_s", p.step_time);
  j.ObjectField("time_breakdown_s", [&] {
    j.NumberField("compute", p.time.compute);
    j.NumberField("tensor_comm", p.time.tensor_comm);
    j.NumberField("pipeline_comm", p.time.pipeline_comm);
    j.NumberField("bubble", p.time.bubble);
    j.NumberField("data_comm", p.time.data_comm);
    j.NumberField("optimizer", p.time.optimizer);
  });
}

void PredictedSection(JsonWriter& j, const plan::Plan& plan) {
  const cost::Prediction& p = plan.chosen.prediction;
  const plan::Totals& t = plan.totals;
  j.ObjectField("predicted", [&] {
    PredictedBreakdowns(j, p);
    j.NumberField("tokens_per_s", p.tokens_per_s);
    j.NumberField("tflops_per_gpu", p.tflops_per_gpu);
    j.NumberField("mfu", p.mfu);
    j.Field("fits", p.fits);
    j.Field("binding", plan.chosen.binding);
    j.ObjectField("data_group_span", [&] {
      j.Field("nodes", p.data_span.nodes);
      j.Field("leaves", p.data_span.leaves);
    });
    j.NumberField("time_to_train_s", t.seconds);
    j.NumberField("gpu_hours", t.gpu_hours);
    NumberOrNull(j, "cost", t.cost);
  });
}

}  // namespace

void WritePlanJson(const plan::Plan& plan, llvm::raw_ostream& out) {
  {
    JsonWriter j(out, 2);
    j.Object([&] {
      j.Field("format", "aviflow-plan");
      j.Field("version", kPlanFormatVersion);
      JobSection(j, plan);
      ModelSection(j, plan);
      HardwareSection(j, plan);
      TrainingSection(j, plan);
      LayoutSection(j, plan);
      RanksSection(j, plan);
      GroupsSection(j, plan);
      StagesSection(j, plan);
      DataSection(j, plan);
      ZeroSection(j, plan);
      OptimizerSection(j, plan);
      CheckpointSection(j, plan);
      PredictedSection(j, plan);
    });
  }
  out << "\n";
}

}  // namespace avf::emit
