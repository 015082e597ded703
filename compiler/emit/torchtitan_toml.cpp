#include "emit/torchtitan_toml.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "emit/trainer_config.h"
#include "trainers/torchtitan.h"

namespace avf::emit {
namespace {

// TOML of one table at a time: `key = value` lines with basic strings,
// integers, floats that read back as floats, and `#` comments.
class Toml {
 public:
  explicit Toml(llvm::raw_ostream& out) : out_(out) {}
  void Comment(std::string_view text) { out_ << "# " << text << "\n"; }
  void Table(std::string_view name) {
    out_ << (first_ ? "" : "\n") << "[" << name << "]\n";
    first_ = false;
  }
  void Key(std::string_view key, std::string_view value) { out_ << key << " = " << Quoted(value) << "\n"; }
  void Key(std::string_view key, const char* value) { Key(key, std::string_view(value)); }
  void Key(std::string_view key, int64_t value) { out_ << key << " = " << value << "\n"; }
  void Key(std::string_view key, bool value) { out_ << key << " = " << (value ? "true" : "false") << "\n"; }
  void Key(std::string_view key, double value) { out_ << key << " = " << Float(value) << "\n"; }
  // An array of string arrays, one inner array a line.
  void Key(std::string_view key, const std::vector<std::vector<std::string>>& rows) {
    out_ << key << " = [\n";
    for (const std::vector<std::string>& row : rows) {
      out_ << "  [";
      for (size_t i = 0; i < row.size(); ++i) out_ << (i ? ", " : "") << Quoted(row[i]);
      out_ << "],\n";
    }
    out_ << "]\n";
  }

  static auto Quoted(std::string_view s) -> std::string {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') {
        q += '\\';
        q += c;
      } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        static constexpr char kHex[] = "0123456789ABCDEF";
        q += "\\u00";
        q += kHex[(c >> 4) & 0xf];
        q += kHex[c & 0xf];
      } else {
        q += c;
      }
    }
    return q + "\"";
  }

  // The shortest text that reads back as `v`: positional unless that takes
  // more than 12 characters, and with a fraction or exponent so that TOML
  // reads a float.
  static auto Float(double v) -> std::string {
    std::string s = Chars(v, std::chars_format::fixed);
    if (s.size() > 12) s = Chars(v, std::chars_format::scientific);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }

  static auto Chars(double v, std::chars_format format) -> std::string {
    char buf[400];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, format);
    return std::string(buf, ec == std::errc() ? end : buf);
  }

 private:
  llvm::raw_ostream& out_;
  bool first_ = true;
};

auto Job(const plan::Plan& plan) -> const check::JobSpec& { return plan.job; }
auto Layout(const plan::Plan& plan) -> const cost::Layout& { return plan.chosen.layout; }
auto AsyncTensorParallel(const plan::Plan& plan) -> bool {
  return Layout(plan).tensor > 1 && Job(plan).workload.overlap_tensor_comm;
}

void WriteJobAndModel(Toml& t, const plan::Plan& plan, const deploy::TrainerPaths& paths) {
  t.Table("job");
  t.Key("description", Job(plan).name);
  if (!paths.output_dir.empty()) t.Key("dump_folder", paths.output_dir);
  t.Table("model");
  t.Key("name", "llama3");
  if (auto flavor = trainers::TorchtitanFlavorOf(Job(plan).workload.model)) {
    t.Comment("every dimension of the job's model equals this flavor's");
    t.Key("flavor", flavor->name);
  }
}

auto DecayType(check::LrSchedule s) -> std::string_view { return s == check::LrSchedule::Linear ? "linear" : "cosine"; }

// Values the job does not state are left to torchtitan's defaults.
void WriteOptimizer(Toml& t, const check::OptimizerSpec& o) {
  t.Table("optimizer");
  t.Key("name", "AdamW");
  if (o.lr) t.Key("lr", *o.lr);
  if (o.betas) {
    t.Key("beta1", o.betas->first);
    t.Key("beta2", o.betas->second);
  }
  if (o.weight_decay) t.Key("weight_decay", *o.weight_decay);
  t.Table("lr_scheduler");
  t.Key("warmup_steps", o.warmup);
  if (o.schedule == check::LrSchedule::Constant) {
    t.Comment("constant after the warm-up: no step is left to the decay phase");
    t.Key("decay_ratio", 0.0);
    return;
  }
  t.Key("decay_type", DecayType(o.schedule));
}

void WriteTraining(Toml& t, const plan::Plan& plan, const deploy::TrainerPaths& paths) {
  const check::JobSpec& job = Job(plan);
  const cost::Layout& l = Layout(plan);
  t.Table("training");
  t.Comment("aviflowc's token shards, read by avf_token_shards.py from the plan's ConfigMap (docs/trainers.md)");
  t.Key("dataset", trainers::kTorchtitanDataset);
  t.Key("dataset_path", paths.data_dir);
  if (l.pipeline > 1) {
    t.Comment("one pipeline schedule runs all of a data rank's micro-batches of a step");
    t.Key("local_batch_size", job.workload.global_batch / l.data);
  } else {
    t.Comment("one micro-batch per forward and backward; global_batch_size sets the accumulation");
    t.Key("local_batch_size", l.micro_batch);
  }
  t.Key("global_batch_size", job.workload.global_batch);
  t.Key("seq_len", job.workload.model.seq_len);
  t.Key("steps", job.steps);
  bool fp32 = job.workload.precision == cost::Precision::Fp32;
  t.Key("mixed_precision_param", fp32 ? "float32" : "bfloat16");
  t.Key("mixed_precision_reduce", "float32");
}

// Model chunk k = chunk * pipeline + stage, each with the modules it holds.
auto ModelParts(const plan::Plan& plan) -> std::vector<std::vector<std::string>> {
  int64_t p = Layout(plan).pipeline;
  std::vector<std::vector<std::string>> parts(plan.stages.size());
  for (const plan::StageChunk& c : plan.stages) {
    auto k = static_cast<size_t>(c.chunk * p + c.stage);
    if (k >= parts.size()) continue;
    std::vector<std::string>& modules = parts[k];
    if (c.embedding) modules.emplace_back("tok_embeddings");
    for (int64_t i = c.first_layer; i < c.first_layer + c.layers; ++i) modules.push_back("layers." + std::to_string(i));
    if (c.output) {
      modules.emplace_back("norm");
      modules.emplace_back("output");
    }
  }
  return parts;
}

auto ScheduleName(const cost::Layout& l) -> std::string_view {
  if (l.schedule == cost::Schedule::GPipe) return "GPipe";
  if (l.schedule == cost::Schedule::Interleaved && l.virtual_stages > 1) return "Interleaved1F1B";
  return "1F1B";
}

void WritePipeline(Toml& t, const plan::Plan& plan) {
  const cost::Layout& l = Layout(plan);
  t.Key("pipeline_parallel_degree", l.pipeline);
  if (l.pipeline <= 1) return;
  if (l.schedule == cost::Schedule::Interleaved && l.virtual_stages <= 1) {
    t.Comment("interleaved with one model chunk per stage is 1F1B");
  }
  t.Key("pipeline_parallel_schedule", ScheduleName(l));
  t.Key("pipeline_parallel_microbatch_size", l.micro_batch);
  t.Comment("the plan's split of the layers, model chunk by model chunk; chunk k runs on stage k % pipeline");
  t.Key("module_fqns_per_model_part", ModelParts(plan));
}

void WriteParallelism(Toml& t, const plan::Plan& plan) {
  const cost::Layout& l = Layout(plan);
  t.Table("parallelism");
  bool replicate = l.zero == 0;
  if (l.data > 1) {
    t.Comment(replicate ? "ZeRO-0: DDP replicas" : "ZeRO-3: FSDP2 shards parameters, gradients and optimizer state");
  }
  t.Key("data_parallel_replicate_degree", replicate ? l.data : int64_t{1});
  t.Key("data_parallel_shard_degree", replicate ? int64_t{1} : l.data);
  if (!replicate && l.data > 1) {
    t.Comment("ZeRO-3 gathers the parameters again for each backward pass; torchtitan's default keeps them");
    t.Comment("whole from forward to backward under pipeline parallelism");
    t.Key("fsdp_reshard_after_forward", "always");
  }
  t.Key("tensor_parallel_degree", l.tensor);
  if (AsyncTensorParallel(plan)) {
    t.Comment("overlap_tensor_comm; needs compile.enable");
    t.Key("enable_async_tensor_parallel", true);
  }
  WritePipeline(t, plan);
}

void WriteRecompute(Toml& t, const plan::Plan& plan) {
  const cost::Layout& l = Layout(plan);
  t.Table("activation_checkpoint");
  if (l.recompute == cost::Recompute::Full) {
    t.Key("mode", "full");
    return;
  }
  if (l.recompute == cost::Recompute::Selective) {
    t.Comment("recompute = selective rebuilds the attention core, which flash attention never stores:");
    t.Comment("it stores what `none` stores (torchtitan's own \"selective\" is another policy)");
  }
  t.Key("mode", "none");
}

void WriteCompile(Toml& t, const plan::Plan& plan) {
  if (!AsyncTensorParallel(plan)) return;
  t.Table("compile");
  t.Comment("async tensor parallelism runs only in compiled transformer blocks");
  t.Key("enable", true);
}

void WriteSaving(Toml& t, const plan::Plan& plan, const deploy::TrainerPaths& paths) {
  const check::CheckpointSpec& c = Job(plan).checkpoint;
  t.Key("folder", paths.checkpoint_dir);
  if (c.every_seconds && !c.every_steps) t.Comment("`every` in time, as steps at the predicted step time");
  t.Key("interval", CheckpointEverySteps(plan));
  int64_t keep = c.keep.value_or(0);
  if (keep == 1) t.Comment("keep = 1: torchtitan keeps at least 2, the last one may still be writing");
  t.Key("keep_latest_k", keep == 1 ? int64_t{2} : keep);
  t.Key("async_mode", c.async ? "async" : "disabled");
  t.Comment("the last step's checkpoint resumes training, as every other one");
  t.Key("last_save_model_only", false);
  if (!c.encrypt_secret.empty()) t.Comment("not encrypted: torchtitan writes plain DCP files (docs/trainers.md)");
}

void WriteCheckpoint(Toml& t, const plan::Plan& plan, const deploy::TrainerPaths& paths) {
  bool saves = !paths.checkpoint_dir.empty();
  bool loads = !paths.init_dir.empty();
  if (!saves && !loads) return;
  t.Table("checkpoint");
  if (!saves) t.Comment("enabled to load the initial weights; the final model goes to job.dump_folder/checkpoint");
  t.Key("enable", true);
  if (saves) {
    WriteSaving(t, plan, paths);
  } else {
    t.Key("interval", std::max<int64_t>(1, Job(plan).steps));
  }
  if (!loads) return;
  t.Comment("the job's `init`, a Hugging Face folder, read when the checkpoint folder has none yet");
  t.Key("initial_load_path", paths.init_dir);
  t.Key("initial_load_in_hf", true);
  t.Key("initial_load_model_only", true);
}

}  // namespace

void WriteTorchtitanToml(const plan::Plan& plan, const deploy::TrainerPaths& paths, llvm::raw_ostream& out) {
  Toml t(out);
  t.Comment("torchtitan " + std::string(trainers::kTorchtitanVersion) + " job config of `" + plan.job.name +
            "`, written by aviflowc.");
  t.Comment("torchrun ... -m torchtitan.train --job.config_file THIS_FILE");
  WriteJobAndModel(t, plan, paths);
  WriteOptimizer(t, plan.job.optimizer);
  WriteTraining(t, plan, paths);
  WriteParallelism(t, plan);
  WriteRecompute(t, plan);
  WriteCompile(t, plan);
  WriteCheckpoint(t, plan, paths);
  t.Table("experimental");
  t.Comment("registers the llama3 train spec with a reader of the token shards (avf_token_shards.py)");
  t.Key("custom_import", trainers::kTorchtitanShardModule);
}

}  // namespace avf::emit
