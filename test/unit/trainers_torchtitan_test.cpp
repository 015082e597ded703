// What torchtitan 0.2.2 can run of a layout (compiler/trainers/torchtitan.cpp),
// its llama3 flavors, and the TOML job config written for a plan
// (compiler/emit/torchtitan_toml.cpp): every key one the release accepts.
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>

#include "cost_test_util.h"
#include "emit/torchtitan_toml.h"
#include "plan/tables.h"
#include "trainers/torchtitan.h"

namespace avf::trainers {
namespace {

using namespace cost::test_shapes;  // NOLINT(google-build-using-namespace): the shared shapes

// torchtitan's debugmodel flavor: 6 layers of width 256.
auto DebugModel() -> cost::ModelShape { return cost::test_shapes::Llama(6, 256, 16, 16, 768, 2048, 256); }

auto Workload(const cost::ModelShape& m) -> cost::Workload { return Work(m, 64, 256); }

// 64 GPUs: tensor 8 with sequence parallelism, FSDP over 8 data ranks.
auto Fsdp() -> cost::Layout {
  cost::Layout l;
  l.data = 8;
  l.tensor = 8;
  l.zero = 3;
  l.sequence_parallel = true;
  return l;
}

auto FieldOf(const cost::Layout& l, const cost::Workload& w) -> std::string {
  auto limit = TorchtitanLimit(l, w);
  if (!limit) return "none";
  // E0731 cuts an argument longer than 160 bytes short.
  EXPECT_LE(limit->what.size(), 160u) << limit->what;
  EXPECT_LE(limit->why.size(), 160u) << limit->why;
  return limit->field + " -> " + limit->fix;
}

TEST(TorchtitanFlavors, MatchEveryDimension) {
  auto f = TorchtitanFlavorOf(Llama3_8B());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "8B");
  f = TorchtitanFlavorOf(DebugModel());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "debugmodel");  // the sdpa flavor, not flex or varlen
  cost::ModelShape m = Llama3_8B();
  m.seq_len = 131072;  // torchtitan takes seq_len from training.seq_len
  EXPECT_TRUE(TorchtitanFlavorOf(m));
  for (auto edit : {+[](cost::ModelShape& s) { s.ffn = 11008; }, +[](cost::ModelShape& s) { s.vocab = 32000; },
                    +[](cost::ModelShape& s) { s.kv_heads = 32; }, +[](cost::ModelShape& s) { s.layers = 31; },
                    +[](cost::ModelShape& s) { s.tied_embeddings = true; },
                    +[](cost::ModelShape& s) { s.arch = cost::Arch::Gpt2; }}) {
    cost::ModelShape other = Llama3_8B();
    edit(other);
    EXPECT_FALSE(TorchtitanFlavorOf(other));
  }
}

TEST(TorchtitanFlavors, TableHoldsTheReleaseFlavors) {
  std::set<std::string> names;
  for (const TorchtitanFlavor& f : TorchtitanFlavors()) names.insert(std::string(f.name));
  EXPECT_EQ(names, (std::set<std::string>{"debugmodel", "debugmodel_flex_attn", "debugmodel_varlen_attn", "8B",
                                          "8B_flex", "8B_varlen", "70B", "405B"}));
  auto f70 = TorchtitanFlavors()[6];
  EXPECT_EQ(f70.name, "70B");
  EXPECT_EQ(f70.ffn, 28672);
  EXPECT_EQ(TorchtitanFlavors()[7].ffn, 53248);
}

TEST(TorchtitanLimit, ExpressibleLayouts) {
  cost::Workload w = Workload(Llama3_8B());
  EXPECT_EQ(FieldOf(Fsdp(), w), "none");
  cost::Layout ddp;  // pure data parallelism, replicated
  ddp.data = 64;
  EXPECT_EQ(FieldOf(ddp, w), "none");
  cost::Layout pp = Fsdp();
  pp.data = 2;
  pp.pipeline = 4;
  pp.virtual_stages = 2;
  pp.schedule = cost::Schedule::Interleaved;
  pp.recompute = cost::Recompute::Full;
  EXPECT_EQ(FieldOf(pp, w), "none");
  w.precision = cost::Precision::Fp32;
  cost::Layout one_rank = Fsdp();
  one_rank.data = 1;
  one_rank.zero = 0;
  EXPECT_EQ(FieldOf(one_rank, w), "none");  // fp32 needs no mixed precision
}

TEST(TorchtitanLimit, Model) {
  cost::ModelShape gpt = DebugModel();
  gpt.arch = cost::Arch::Gpt2;
  EXPECT_EQ(FieldOf(Fsdp(), Workload(gpt)), "model -> ");
  cost::ModelShape llama2 = Llama3_8B();
  llama2.vocab = 32000;
  llama2.kv_heads = 32;
  llama2.ffn = 11008;
  auto limit = TorchtitanLimit(Fsdp(), Workload(llama2));
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->field, "model");
  EXPECT_NE(limit->what.find("vocab = 32000"), std::string::npos);
}

TEST(TorchtitanLimit, WorkloadFields) {
  cost::Workload w = Workload(Llama3_8B());
  w.precision = cost::Precision::Fp16;
  EXPECT_EQ(FieldOf(Fsdp(), w), "precision -> precision = bf16");
  w = Workload(Llama3_8B());
  w.attention = cost::Attention::Materialized;
  EXPECT_EQ(FieldOf(Fsdp(), w), "attention -> attention = flash");
  w = Workload(Llama3_8B());
  w.optimizer = cost::OptimizerKind::Sgd;
  EXPECT_EQ(FieldOf(Fsdp(), w), "optimizer -> optimizer { kind = adamw }");
}

TEST(TorchtitanLimit, ZeroStages) {
  cost::Workload w = Workload(Llama3_8B());
  for (int zero : {1, 2}) {
    cost::Layout l = Fsdp();
    l.zero = zero;
    EXPECT_EQ(FieldOf(l, w), "zero -> zero = 3");
    l.tensor = 1;
    l.sequence_parallel = false;
    l.data = 64;
    EXPECT_EQ(FieldOf(l, w), "zero -> zero = 3");
    l.data = 1;  // one data rank shards nothing
    l.pipeline = 1;
    EXPECT_EQ(FieldOf(l, w), "none");
  }
  cost::Layout ddp_tp = Fsdp();
  ddp_tp.zero = 0;  // DDP only as the sole parallelism
  EXPECT_EQ(FieldOf(ddp_tp, w), "zero -> zero = 3");
}

TEST(TorchtitanLimit, MixedPrecisionNeedsFsdpBesideTensorOrPipeline) {
  cost::Workload w = Workload(Llama3_8B());
  cost::Layout l = Fsdp();
  l.data = 1;
  EXPECT_EQ(FieldOf(l, w), "precision -> precision = fp32");
  l.tensor = 1;
  l.sequence_parallel = false;
  l.pipeline = 8;
  EXPECT_EQ(FieldOf(l, w), "precision -> precision = fp32");
  l.pipeline = 1;  // one GPU: autocast
  EXPECT_EQ(FieldOf(l, w), "none");
}

TEST(TorchtitanLimit, TensorParallelism) {
  cost::Workload w = Workload(Llama3_8B());
  cost::Layout l = Fsdp();
  l.sequence_parallel = false;
  EXPECT_EQ(FieldOf(l, w), "sequence_parallel -> sequence_parallel = true");
  w.model.seq_len = 4100;  // 4 x 1025
  EXPECT_EQ(FieldOf(Fsdp(), w), "tensor -> tensor = 4");
}

// Reads `[table]` headers and `key =` lines back as `table.key` paths.
auto KeysOf(const std::string& toml) -> std::vector<std::string> {
  std::vector<std::string> keys;
  std::istringstream in(toml);
  std::string line, table;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == ' ' || line[0] == ']') continue;
    if (line[0] == '[') {
      table = line.substr(1, line.find(']') - 1);
      continue;
    }
    auto eq = line.find(" = ");
    if (eq != std::string::npos) keys.push_back(table + "." + line.substr(0, eq));
  }
  return keys;
}

auto PlanFor(cost::Layout l, cost::ModelShape m) -> plan::Plan {
  plan::Plan p;
  p.job.name = "tt";
  p.job.workload = Workload(m);
  p.job.workload.overlap_tensor_comm = true;
  p.job.steps = 1000;
  p.job.optimizer.lr = 3e-4;
  p.job.optimizer.betas = std::make_pair(0.9, 0.95);
  p.job.optimizer.weight_decay = 0.1;
  p.job.optimizer.warmup = 100;
  p.job.checkpoint.enabled = true;
  p.job.checkpoint.every_seconds = 1800;
  p.job.checkpoint.keep = 1;
  p.job.checkpoint.async = true;
  p.job.hardware.gpus_per_node = 8;
  p.job.hardware.nodes = 8;
  p.job.dataset.tokens = 1000000;
  p.chosen.layout = l;
  p.chosen.prediction.step_time = 7;
  plan::BuildTables(p);
  return p;
}

auto Toml(const plan::Plan& p, const deploy::TrainerPaths& paths) -> std::string {
  std::string s;
  llvm::raw_string_ostream out(s);
  emit::WriteTorchtitanToml(p, paths, out);
  return out.str();
}

TEST(TorchtitanToml, EveryKeyIsOneTheReleaseAccepts) {
  cost::Layout l = Fsdp();
  l.data = 2;
  l.pipeline = 4;
  l.virtual_stages = 2;
  l.schedule = cost::Schedule::Interleaved;
  l.micro_batch = 2;
  l.recompute = cost::Recompute::Selective;
  deploy::TrainerPaths paths{"/data/docs", "/ckpt/tt", "/models/llama3-8b-hf", "/out/tt", "", ""};
  std::string toml = Toml(PlanFor(l, Llama3_8B()), paths);
  std::vector<std::string> keys = KeysOf(toml);
  EXPECT_GT(keys.size(), 30u) << toml;
  for (const std::string& key : keys) EXPECT_TRUE(IsTorchtitanKey(key)) << key;
  std::set<std::string> unique(keys.begin(), keys.end());
  EXPECT_EQ(unique.size(), keys.size()) << toml;  // one fact per key
  for (const char* fact :
       {"flavor = \"8B\"", "data_parallel_shard_degree = 2", "pipeline_parallel_schedule = \"Interleaved1F1B\"",
        "local_batch_size = 128", "global_batch_size = 256", "interval = 257", "keep_latest_k = 2",
        "async_mode = \"async\"", "mode = \"none\"", "enable_async_tensor_parallel = true", "lr = 0.0003",
        "[\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\", \"layers.3\"],",
        "initial_load_path = \"/models/llama3-8b-hf\""}) {
    EXPECT_NE(toml.find(fact), std::string::npos) << fact << "\n" << toml;
  }
}

TEST(TorchtitanToml, ReplicatedWithoutCheckpointsOrPipeline) {
  cost::Layout l;
  l.data = 64;
  l.micro_batch = 2;
  deploy::TrainerPaths paths{"/data/docs", "", "", "/out/tt", "", ""};
  plan::Plan p = PlanFor(l, DebugModel());
  p.job.optimizer = {};
  p.job.optimizer.schedule = check::LrSchedule::Constant;
  std::string toml = Toml(p, paths);
  for (const std::string& key : KeysOf(toml)) EXPECT_TRUE(IsTorchtitanKey(key)) << key;
  for (const char* fact : {"data_parallel_replicate_degree = 64", "data_parallel_shard_degree = 1",
                           "local_batch_size = 2", "decay_ratio = 0.0", "flavor = \"debugmodel\""}) {
    EXPECT_NE(toml.find(fact), std::string::npos) << fact << "\n" << toml;
  }
  for (const char* absent : {"[checkpoint]", "pipeline_parallel_schedule", "lr =", "[compile]", "beta1"}) {
    EXPECT_EQ(toml.find(absent), std::string::npos) << absent << "\n" << toml;
  }
  EXPECT_EQ(toml, Toml(p, paths));  // deterministic
}

TEST(TorchtitanKeys, ListIsTheRelease) {
  EXPECT_TRUE(IsTorchtitanKey("training.seq_len"));
  EXPECT_TRUE(IsTorchtitanKey("parallelism.module_fqns_per_model_part"));
  EXPECT_TRUE(IsTorchtitanKey("training.dataloader.num_workers"));
  EXPECT_FALSE(IsTorchtitanKey("training.dataloader"));  // a table, not a key
  EXPECT_FALSE(IsTorchtitanKey("training.batch_size"));
}

}  // namespace
}  // namespace avf::trainers
