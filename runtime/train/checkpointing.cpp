#include "train/checkpointing.h"

#include <fmt/format.h>

#include "checkpoint/chunks.h"
#include "checkpoint/store.h"
#include "interop/huggingface.h"
#include "parallel/runnable.h"

namespace avf::train {

namespace {

using checkpoint::Index;
using checkpoint::StateKind;

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

}  // namespace

auto MetaOf(const CheckpointContext& c, int64_t step) -> Index {
  const runtime::RunPlan& p = *c.plan;
  Index index;
  index.step = step;
  checkpoint::Origin& o = index.origin;
  o.job = p.job.name;
  o.model = parallel::ModelConfigOf(p);
  o.precision = runtime::Name(p.training.precision).str();
  o.plan_sha256 = c.plan_sha256;
  o.ranks = c.world, o.data = p.layout.data, o.tensor = p.layout.tensor, o.pipeline = p.layout.pipeline;
  o.virtual_stages = p.layout.virtual_stages, o.zero = p.layout.zero, o.micro_batch = p.layout.micro_batch;
  o.init_seed = c.seed;
  if (c.key) index.key_id = checkpoint::KeyId(*c.key);
  checkpoint::DataPosition& d = index.data;
  d.dataset = p.data.name, d.tokens = c.dataset_tokens;
  d.global_batch = c.order->global_batch(), d.seq_len = c.order->seq_len();
  d.batches = step, d.epoch = c.order->epoch(step), d.next_sequence = c.order->first_sequence(step);
  return index;
}

auto HoldingsOf(const runtime::RunPlan& p, int64_t rank) -> RankHoldings {
  const runtime::PlanRank& me = p.ranks[static_cast<size_t>(rank)];
  RankHoldings h;
  h.layout = model::LayoutOf(parallel::ModelConfigOf(p), parallel::ShardOf(p, me.pipeline, me.tensor));
  optim::ElementRun mine{0, h.layout.total};
  if (p.layout.zero >= 1 && p.layout.data > 1) {
    const runtime::ZeroSlice& z = p.zero.slices[static_cast<size_t>(me.pipeline * p.layout.data + me.data)];
    mine = {z.first, z.count};
  }
  bool sliced = p.layout.zero >= 3 || p.training.precision == runtime::Precision::Bf16;
  h.runs = {sliced ? mine : optim::ElementRun{0, h.layout.total}, mine};
  return h;
}

auto SameModel(const model::ModelConfig& a, const model::ModelConfig& b) -> bool {
  return a.arch == b.arch && a.layers == b.layers && a.hidden == b.hidden && a.heads == b.heads &&
         a.kv_heads == b.kv_heads && a.ffn == b.ffn && a.vocab == b.vocab && a.seq_len == b.seq_len &&
         a.tied_embeddings == b.tied_embeddings && a.rope_theta == b.rope_theta;
}

namespace {

auto Describe(const model::ModelConfig& m) -> std::string {
  return fmt::format("{} of {} layers, hidden {}, {} heads ({} kv), ffn {}, vocab {}, seq_len {}{}",
                     checkpoint::ArchName(m.arch).str(), m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.vocab,
                     m.seq_len, m.tied_embeddings ? ", tied embeddings" : "");
}

// Rank r checks the SHA-256 of files r, r + world, …; the ranks then sum
// their failures per file, so every rank agrees and rank 0 names the first.
auto VerifyShared(const CheckpointContext& c, parallel::Engine& engine, const std::string& dir, const Index& index,
                  std::string& message) -> llvm::Error {
  std::vector<float> failed(index.files.size(), 0.0f);
  std::vector<std::string> why(index.files.size());
  for (size_t f = static_cast<size_t>(c.rank); f < index.files.size(); f += static_cast<size_t>(c.world)) {
    if (llvm::Error e = checkpoint::VerifyFile(dir, index, f)) {
      why[f] = llvm::toString(std::move(e));
      failed[f] = 1;
    }
  }
  if (llvm::Error e = engine.SumOverWorld(failed.data(), failed.size())) return e;
  for (size_t f = 0; f < failed.size(); ++f) {
    if (failed[f] == 0) continue;
    message = !why[f].empty() ? why[f]
                              : fmt::format("{}/{}: its SHA-256 is not the one in the index (checked by rank {})", dir,
                                            index.files[f].name, f % static_cast<size_t>(c.world));
    break;
  }
  return llvm::Error::success();
}

auto Restore(const CheckpointContext& c, parallel::Engine& engine, const std::string& dir, const Index& index)
    -> llvm::Error {
  checkpoint::DirectorySource source(dir, index, c.key);
  parallel::Engine::StateRuns runs = engine.state_runs();
  parallel::Engine::OptimizerState state;
  state.step = index.step;
  std::vector<float>* into[] = {&state.params, &state.m, &state.v};
  checkpoint::LoadScratch scratch;
  for (StateKind kind : checkpoint::kStateKinds) {
    optim::ElementRun run = kind == StateKind::Param ? runs.params : runs.moments;
    auto values = checkpoint::LoadArray(index, source, engine.layout(), kind, run, &scratch);
    if (!values) return Fail(fmt::format("{}: {}", dir, llvm::toString(values.takeError())));
    *into[static_cast<int>(kind)] = std::move(*values);
  }
  return engine.RestoreState(state);
}

}  // namespace

auto Snapshot(const CheckpointContext& c, parallel::Engine& engine, SavedState& saved) -> llvm::Error {
  engine.SaveState(saved.state);
  saved.runs = engine.state_runs();
  if (saved.layout.tensors.empty()) saved.layout = engine.layout();
  parallel::Engine::StateRuns planned = HoldingsOf(*c.plan, c.rank).runs;
  const parallel::Engine::StateRuns& runs = saved.runs;
  if (runs.params.first != planned.params.first || runs.params.count != planned.params.count ||
      runs.moments.first != planned.moments.first || runs.moments.count != planned.moments.count) {
    return Fail("checkpoint: the engine holds other elements than the plan gives this rank");
  }
  return llvm::Error::success();
}

auto WriteSnapshot(const CheckpointContext& c, const SavedState& saved, int64_t step) -> llvm::Error {
  const runtime::PlanRank& me = c.plan->ranks[static_cast<size_t>(c.rank)];
  checkpoint::RankShard shard{&saved.layout, me.tensor, me.pipeline == 0,
                              checkpoint::ShareOf(saved.layout.total, me.data, c.plan->layout.data)};
  const parallel::Engine::StateRuns& runs = saved.runs;
  checkpoint::SavePlan plan = checkpoint::PlanSave(shard, {{StateKind::Param, runs.params, saved.state.params},
                                                           {StateKind::AdamM, runs.moments, saved.state.m},
                                                           {StateKind::AdamV, runs.moments, saved.state.v}});
  return checkpoint::WriteRank(checkpoint::StepDir(c.root, step), c.rank, plan, c.key);
}

auto SaveCheckpoint(const CheckpointContext& c, parallel::Engine& engine, int64_t step, SavedState& snapshot)
    -> llvm::Error {
  if (llvm::Error e = Snapshot(c, engine, snapshot)) return e;
  return WriteSnapshot(c, snapshot, step);
}

auto CommitCheckpoint(const CheckpointContext& c, int64_t step) -> llvm::Error {
  return checkpoint::Commit(checkpoint::StepDir(c.root, step), c.world, MetaOf(c, step));
}

auto MismatchWithJob(const CheckpointContext& c, const Index& index) -> std::string {
  const checkpoint::Origin& o = index.origin;
  const runtime::RunPlan& p = *c.plan;
  model::ModelConfig model = parallel::ModelConfigOf(p);
  if (o.job != p.job.name) return fmt::format("it is a checkpoint of job `{}`, not of `{}`", o.job, p.job.name);
  if (!SameModel(o.model, model))
    return fmt::format("it is of another model ({}; this job trains a {})", Describe(o.model), Describe(model));
  const checkpoint::DataPosition& d = index.data;
  if (d.dataset != p.data.name) return fmt::format("it was trained on dataset `{}`, not `{}`", d.dataset, p.data.name);
  if (d.global_batch != c.order->global_batch() || d.seq_len != c.order->seq_len()) {
    return fmt::format(
        "it was trained with batch = {} sequences of {} tokens, this job with {} of {}: the order "
        "of the data would change",
        d.global_batch, d.seq_len, c.order->global_batch(), c.order->seq_len());
  }
  if (d.tokens != c.dataset_tokens) {
    return fmt::format(
        "the dataset held {} tokens when it was written and holds {} now: the order of the data "
        "would change",
        d.tokens, c.dataset_tokens);
  }
  if (d.batches != index.step || d.epoch != c.order->epoch(index.step) ||
      d.next_sequence != c.order->first_sequence(index.step)) {
    return fmt::format("its data position (batch {}, epoch {}, sequence {}) is not where step {} reads", d.batches,
                       d.epoch, d.next_sequence, index.step);
  }
  if (index.step > p.training.steps) {
    return fmt::format("it is at step {}, past the job's {} steps", index.step, p.training.steps);
  }
  return "";
}

namespace {

// A whole model's fp32 parameters in memory, as the chunks of an index.
class FlatSource : public checkpoint::ChunkSource {
 public:
  explicit FlatSource(const std::vector<float>& flat) : flat_(flat) {}
  auto Read(int64_t, uint64_t offset, int64_t count, float* out) -> llvm::Error override {
    std::copy_n(flat_.begin() + static_cast<int64_t>(offset / sizeof(float)), count, out);
    return llvm::Error::success();
  }

 private:
  const std::vector<float>& flat_;
};

auto FlatIndex(const model::ParamLayout& whole) -> Index {
  Index index;
  index.files.push_back({"memory", static_cast<uint64_t>(whole.total) * sizeof(float), ""});
  for (const model::ParamTensor& t : whole.tensors) {
    if (t.size == 0) continue;
    checkpoint::Chunk chunk{0, static_cast<uint64_t>(t.offset) * sizeof(float), t.part, 0, t.size};
    index.tensors.push_back({(checkpoint::Prefix(StateKind::Param) + t.name).str(), t.part.rows, t.part.cols, {chunk}});
  }
  return index;
}

}  // namespace

auto InitFromPretrained(const CheckpointContext& c, parallel::Engine& engine, const std::string& dir,
                        llvm::raw_ostream& progress) -> llvm::Error {
  llvm::Expected<interop::ImportedModel> imported = interop::ImportHuggingFace(dir);
  if (!imported) return imported.takeError();
  model::ModelConfig model = parallel::ModelConfigOf(*c.plan);
  if (!SameModel(imported->config, model)) {
    return Fail(fmt::format("{}: the pretrained model is a {}, but this job trains a {}", dir,
                            Describe(imported->config), Describe(model)));
  }
  llvm::Expected<std::vector<float>> flat = interop::OurFlat(model, imported->tensors);
  if (!flat) return Fail(fmt::format("{}: {}", dir, llvm::toString(flat.takeError())));
  FlatSource source(*flat);
  Index index = FlatIndex(model::LayoutOf(model));
  parallel::Engine::StateRuns runs = engine.state_runs();
  parallel::Engine::OptimizerState state;
  auto params = checkpoint::LoadArray(index, source, engine.layout(), StateKind::Param, runs.params);
  if (!params) return Fail(fmt::format("{}: {}", dir, llvm::toString(params.takeError())));
  state.params = std::move(*params);
  state.m.assign(static_cast<size_t>(runs.moments.count), 0.0f);
  state.v.assign(static_cast<size_t>(runs.moments.count), 0.0f);
  if (llvm::Error e = engine.RestoreState(state)) return e;
  if (c.rank == 0) progress << fmt::format("starting from the pretrained weights in {}\n", dir);
  return llvm::Error::success();
}

auto ResumeLatest(const CheckpointContext& c, parallel::Engine& engine, llvm::raw_ostream& progress)
    -> llvm::Expected<std::optional<int64_t>> {
  llvm::Expected<std::vector<checkpoint::StepEntry>> steps = checkpoint::ListSteps(c.root);
  if (!steps) return steps.takeError();
  std::vector<std::string> passed;
  for (auto it = steps->rbegin(); it != steps->rend(); ++it) {
    if (!it->committed) continue;
    std::string dir = checkpoint::StepDir(c.root, it->step);
    llvm::Expected<Index> index = checkpoint::OpenIndex(dir);
    // The index's and the files' own errors name them; a mismatch names the directory.
    std::string why = index ? MismatchWithJob(c, *index) : llvm::toString(index.takeError());
    if (index && !why.empty()) why = fmt::format("{}: {}", dir, why);
    if (index && why.empty()) {
      if (llvm::Error e = checkpoint::CheckKey(dir, *index, c.key)) why = llvm::toString(std::move(e));
    }
    if (why.empty()) {
      if (llvm::Error e = VerifyShared(c, engine, dir, *index, why)) return e;
    }
    if (!why.empty()) {
      passed.push_back(why);
      if (c.rank == 0) progress << fmt::format("avf-run: note: not resuming from {}: {}\n", dir, why);
      continue;
    }
    if (llvm::Error e = Restore(c, engine, dir, *index)) return e;
    if (c.rank == 0) {
      progress << fmt::format("resuming from {} (step {}{})\n", dir, index->step,
                              passed.empty() ? "" : ", the newest checkpoint that verifies");
    }
    return index->step;
  }
  if (!passed.empty()) {
    return Fail(
        fmt::format("no checkpoint under {} can resume this job (`--resume never` starts over); the newest: "
                    "{}",
                    c.root, passed.front()));
  }
  return std::nullopt;
}

}  // namespace avf::train
