#include "train/checkpoint_tools.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include "checkpoint/chunks.h"
#include "checkpoint/store.h"
#include "data/shard_format.h"
#include "data/token_reader.h"
#include "interop/huggingface.h"
#include "model/transformer.h"
#include "parallel/runnable.h"
#include "train/checkpointing.h"

namespace avf::train {

namespace {

using checkpoint::Index;
using checkpoint::StateKind;

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// The whole model's fp32 parameters, in the one-rank flat layout.
auto WholeModel(const std::string& step_dir, const Index& index, const crypto::Key* key)
    -> llvm::Expected<std::vector<float>> {
  if (llvm::Error e = checkpoint::CheckKey(step_dir, index, key)) return e;
  model::ParamLayout layout = model::LayoutOf(index.origin.model);
  checkpoint::DirectorySource source(step_dir, index, key);
  return checkpoint::LoadArray(index, source, layout, StateKind::Param, {0, layout.total});
}

auto Bytes(uint64_t n) -> std::string {
  if (n >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1 << 30));
  if (n >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(n) / (1 << 20));
  return fmt::format("{} bytes", n);
}

// The shard files of `data`: itself, or a folder's shard_000000.bin, … .
auto ShardFiles(const std::string& data) -> llvm::Expected<std::vector<std::string>> {
  if (!llvm::sys::fs::is_directory(data)) return std::vector<std::string>{data};
  std::vector<std::string> files;
  for (int64_t i = 0;; ++i) {
    std::string path = data + "/" + data::ShardFileName(i);
    if (!llvm::sys::fs::exists(path)) break;
    files.push_back(path);
  }
  if (files.empty()) return Fail(fmt::format("{}: no shard files (shard_000000.bin, …) in it", data));
  return files;
}

}  // namespace

auto StepDirectoryOf(const std::string& path) -> llvm::Expected<std::string> {
  if (llvm::sys::fs::exists(path + "/" + checkpoint::kIndexFile.str()) ||
      llvm::sys::fs::exists(path + "/" + checkpoint::kCommittedFile.str())) {
    return path;
  }
  llvm::Expected<std::vector<checkpoint::StepEntry>> steps = checkpoint::ListSteps(path);
  if (!steps) return steps.takeError();
  for (auto it = steps->rbegin(); it != steps->rend(); ++it) {
    if (it->committed) return checkpoint::StepDir(path, it->step);
  }
  if (!llvm::sys::fs::is_directory(path)) return Fail(path + ": no such checkpoint directory");
  return Fail(path + ": holds no committed checkpoint (step_NNNNNNNN/ with COMMITTED)");
}

auto VerifiedIndex(const std::string& step_dir) -> llvm::Expected<Index> {
  llvm::Expected<Index> index = checkpoint::OpenIndex(step_dir);
  if (!index) return index.takeError();
  for (size_t f = 0; f < index->files.size(); ++f) {
    if (llvm::Error e = checkpoint::VerifyFile(step_dir, *index, f)) return e;
  }
  return index;
}

void PrintInspection(const std::string& step_dir, const Index& index, bool tensors, llvm::raw_ostream& out) {
  const checkpoint::Origin& o = index.origin;
  const model::ModelConfig& m = o.model;
  uint64_t bytes = 0;
  for (const checkpoint::DataFile& f : index.files) bytes += f.bytes;
  int64_t parameters = model::LayoutOf(m).total;
  out << fmt::format("{}: step {} of job `{}`\n", step_dir, index.step, o.job);
  out << fmt::format(
      "  model      {}, {} layers, hidden {}, {} heads ({} kv), ffn {}, vocab {}, seq_len {}{}: {} "
      "parameters\n",
      checkpoint::ArchName(m.arch).str(), m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.vocab, m.seq_len,
      m.tied_embeddings ? ", tied embeddings" : "", parameters);
  out << fmt::format(
      "  written by {} rank{} (data {}, tensor {}, pipeline {}{}, ZeRO {}, micro_batch {}), {}, plan "
      "sha256 {}\n",
      o.ranks, o.ranks == 1 ? "" : "s", o.data, o.tensor, o.pipeline,
      o.virtual_stages > 1 ? fmt::format(" x {} virtual", o.virtual_stages) : "", o.zero, o.micro_batch, o.precision,
      o.plan_sha256.empty() ? "(none)" : o.plan_sha256);
  const checkpoint::DataPosition& d = index.data;
  out << fmt::format(
      "  data       `{}` ({} tokens): {} global batches of {} x {} tokens trained; next: epoch {}, "
      "sequence {}\n",
      d.dataset, d.tokens, d.batches, d.global_batch, d.seq_len, d.epoch, d.next_sequence);
  out << fmt::format("  holds      {} tensors in {} files, {}\n", index.tensors.size(), index.files.size(),
                     Bytes(bytes));
  out << fmt::format("  integrity  committed; index.json and every file match their SHA-256\n");
  if (!index.key_id.empty())
    out << fmt::format("  encrypted  {} (key id {})\n", checkpoint::kCipher.str(), index.key_id);
  if (!tensors) return;
  for (const checkpoint::Tensor& t : index.tensors) {
    out << fmt::format("  {} [{} x {}] in {} chunks\n", t.name, t.rows, t.cols, t.chunks.size());
  }
}

auto Convert(const std::string& step_dir, const Index& index, const runtime::RunPlan& plan,
             const std::string& plan_sha256, const std::string& out_root, const crypto::Key* key) -> llvm::Error {
  if (llvm::Error e = checkpoint::CheckKey(step_dir, index, key)) return e;
  model::ModelConfig model = parallel::ModelConfigOf(plan);
  if (!SameModel(model, index.origin.model))
    return Fail(fmt::format("{}: the plan's model is not the checkpoint's", step_dir));
  std::string out = checkpoint::StepDir(out_root, index.step);
  checkpoint::DirectorySource source(step_dir, index, key);
  int64_t ranks = static_cast<int64_t>(plan.ranks.size());
  checkpoint::LoadScratch scratch;
  for (int64_t r = 0; r < ranks; ++r) {
    RankHoldings h = HoldingsOf(plan, r);
    std::vector<float> values[3];
    for (StateKind kind : checkpoint::kStateKinds) {
      optim::ElementRun run = kind == StateKind::Param ? h.runs.params : h.runs.moments;
      auto loaded = checkpoint::LoadArray(index, source, h.layout, kind, run, &scratch);
      if (!loaded) return Fail(fmt::format("{}: {}", step_dir, llvm::toString(loaded.takeError())));
      values[static_cast<int>(kind)] = std::move(*loaded);
    }
    const runtime::PlanRank& me = plan.ranks[static_cast<size_t>(r)];
    checkpoint::RankShard shard{&h.layout, me.tensor, me.pipeline == 0,
                                checkpoint::ShareOf(h.layout.total, me.data, plan.layout.data)};
    checkpoint::SavePlan save = checkpoint::PlanSave(shard, {{StateKind::Param, h.runs.params, values[0]},
                                                             {StateKind::AdamM, h.runs.moments, values[1]},
                                                             {StateKind::AdamV, h.runs.moments, values[2]}});
    if (llvm::Error e = checkpoint::WriteRank(out, r, save, key)) return e;
  }
  Index meta = index;
  meta.files.clear(), meta.tensors.clear();
  checkpoint::Origin& o = meta.origin;
  o.plan_sha256 = plan_sha256, o.ranks = ranks, o.data = plan.layout.data, o.tensor = plan.layout.tensor;
  o.pipeline = plan.layout.pipeline, o.virtual_stages = plan.layout.virtual_stages, o.zero = plan.layout.zero;
  o.micro_batch = plan.layout.micro_batch;
  o.precision = runtime::Name(plan.training.precision).str();
  meta.key_id = key ? checkpoint::KeyId(*key) : "";
  return checkpoint::Commit(out, ranks, meta);
}

auto ExportSafetensors(const std::string& step_dir, const Index& index, const std::string& out_dir, bool bf16,
                       const crypto::Key* key) -> llvm::Error {
  llvm::Expected<std::vector<float>> flat = WholeModel(step_dir, index, key);
  if (!flat) return flat.takeError();
  auto ours = interop::OurTensors(index.origin.model, *flat);
  if (!ours) return ours.takeError();
  if (std::error_code ec = llvm::sys::fs::create_directories(out_dir)) {
    return Fail(fmt::format("{}: {}", out_dir, ec.message()));
  }
  return interop::ExportHuggingFace(out_dir, index.origin.model, *ours,
                                    bf16 ? interop::Dtype::BF16 : interop::Dtype::F32);
}

auto Evaluate(const std::string& step_dir, const Index& index, const std::string& data, const crypto::Key* key,
              int64_t& windows) -> llvm::Expected<double> {
  const model::ModelConfig& c = index.origin.model;
  llvm::Expected<std::vector<std::string>> files = ShardFiles(data);
  if (!files) return files.takeError();
  data::DatasetLayout layout{"", static_cast<int64_t>(files->size()), 0, c.vocab, *files};
  auto reader = data::TokenReader::Open(layout);
  if (!reader) return reader.takeError();
  int64_t seq = c.seq_len, window = seq + 1;
  windows = (*reader)->tokens() / window;
  if (windows == 0) {
    return Fail(
        fmt::format("{}: {} tokens, fewer than one window of seq_len + 1 = {}", data, (*reader)->tokens(), window));
  }
  llvm::Expected<std::vector<float>> flat = WholeModel(step_dir, index, key);
  if (!flat) return flat.takeError();
  model::Transformer<float> m(c);
  std::copy(flat->begin(), flat->end(), m.parameters().begin());
  constexpr int64_t kBatch = 8;
  double sum = 0;
  std::vector<uint32_t> tokens, inputs, targets;
  for (int64_t first = 0; first < windows; first += kBatch) {
    int64_t batch = std::min(kBatch, windows - first);
    tokens.clear(), inputs.clear(), targets.clear();
    if (llvm::Error e = (*reader)->Read(first * window, batch * window, tokens)) return e;
    for (int64_t b = 0; b < batch; ++b) {
      auto w = tokens.begin() + b * window;
      inputs.insert(inputs.end(), w, w + seq);
      targets.insert(targets.end(), w + 1, w + window);
    }
    sum += m.Forward(inputs.data(), targets.data(), batch, seq) * static_cast<double>(batch);
  }
  return sum / static_cast<double>(windows);
}

}  // namespace avf::train
