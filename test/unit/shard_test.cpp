// The sharded transformer against the whole model: a shard's layout maps
// onto the full model element by element and holds exactly its values after
// Initialize; pipeline stages run one after another in this process, and
// tensor-parallel ranks as forked processes (with and without sequence
// parallelism), give the whole model's loss and, mapped back, its gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "forked_ranks.h"
#include "model/transformer.h"

namespace avf::model {
namespace {

auto Tiny(Arch arch) -> ModelConfig {
  // heads, kv heads, ffn and vocab divide by 2 (and heads, ffn, vocab by 4).
  return {arch, 4, 16, 4, arch == Arch::Llama ? 2 : 4, 32, 24, 8, arch == Arch::Gpt2, 10000.0};
}

struct Batch {
  std::vector<uint32_t> tokens, targets;
  int64_t batch = 2, seq = 8;
};

auto MakeBatch(const ModelConfig& c) -> Batch {
  Batch b;
  for (int64_t i = 0; i < b.batch * b.seq; ++i) {
    b.tokens.push_back(static_cast<uint32_t>((i * 7 + 3) % c.vocab));
    b.targets.push_back(static_cast<uint32_t>((i * 5 + 1) % c.vocab));
  }
  return b;
}

// The whole model's loss and gradients by tensor name.
struct Reference {
  double loss = 0;
  std::map<std::string, std::vector<float>> grads, params;
};

auto Whole(const ModelConfig& c, const Batch& b) -> Reference {
  Transformer<float> m(c);
  m.Initialize(11);
  Reference r;
  r.loss = m.Forward(b.tokens.data(), b.targets.data(), b.batch, b.seq);
  m.Backward();
  for (const ParamTensor& t : m.layout().tensors) {
    r.grads[t.name].assign(m.gradients().data() + t.offset, m.gradients().data() + t.offset + t.size);
    r.params[t.name].assign(m.parameters().data() + t.offset, m.parameters().data() + t.offset + t.size);
  }
  return r;
}

// "" when every element of the shard's gradients (and parameters) equals
// the whole model's at its full index, within tol x the tensor's largest
// gradient; else the first mismatch. With `split_wte` (a tied model over
// several stages) the wte gradients are checked by the caller: each stage's
// is only part of the whole one.
auto Compare(Transformer<float>& m, const Reference& r, double tol, bool split_wte) -> std::string {
  for (const ParamTensor& t : m.layout().tensors) {
    if (split_wte && t.name == "wte") continue;
    const std::vector<float>& want = r.grads.at(t.name);
    const std::vector<float>& value = r.params.at(t.name);
    double scale = 1e-12;
    for (float g : want) scale = std::max(scale, static_cast<double>(std::abs(g)));
    for (int64_t i = 0; i < t.size; ++i) {
      int64_t full = t.part.FullIndex(i);
      float got = m.gradients()[static_cast<size_t>(t.offset + i)];
      if (m.parameters()[static_cast<size_t>(t.offset + i)] != value[static_cast<size_t>(full)]) {
        return fmt::format("{}[{}]: parameter differs from the whole model's [{}]", t.name, i, full);
      }
      if (std::abs(got - want[static_cast<size_t>(full)]) > tol * scale) {
        return fmt::format("{}[{}] (full {}): gradient {} vs {}", t.name, i, full, got,
                           want[static_cast<size_t>(full)]);
      }
    }
  }
  return "";
}

TEST(ShardLayout, TensorShardsTileTheWholeModel) {
  for (Arch arch : {Arch::Gpt2, Arch::Llama}) {
    ModelConfig c = Tiny(arch);
    ParamLayout whole = LayoutOf(c);
    std::map<std::string, std::vector<int>> seen;
    for (const ParamTensor& t : whole.tensors) seen[t.name].assign(static_cast<size_t>(t.size), 0);
    for (int64_t r = 0; r < 2; ++r) {
      ShardSpec s{.tensor_rank = r, .tensor_size = 2};
      for (const ParamTensor& t : LayoutOf(c, s).tensors) {
        for (int64_t i = 0; i < t.size; ++i) ++seen[t.name][static_cast<size_t>(t.part.FullIndex(i))];
      }
    }
    for (const ParamTensor& t : whole.tensors) {
      // Norms, row-parallel biases and positions are replicated; the rest is cut.
      bool replicated = t.part.rows == t.size / t.part.cols && t.name.find(".weight") == std::string::npos &&
                        t.name != "wte" && t.name.find("attn.qkv") == std::string::npos &&
                        t.name.find("mlp.fc") == std::string::npos;
      if (t.name.find("ln_") != std::string::npos || t.name == "wpe") replicated = true;
      for (int count : seen[t.name]) EXPECT_EQ(count, replicated ? 2 : 1) << t.name;
    }
  }
}

// Pipeline stages (with interleaved chunks) run in order in one process.
void CheckPipeline(Arch arch, int64_t stages, int64_t chunks) {
  ModelConfig c = Tiny(arch);
  Batch b = MakeBatch(c);
  Reference r = Whole(c, b);
  int64_t per = c.layers / (stages * chunks);
  std::vector<std::unique_ptr<Transformer<float>>> stage;
  for (int64_t s = 0; s < stages; ++s) {
    ShardSpec spec{.embedding = s == 0, .output = s == stages - 1};
    for (int64_t k = 0; k < chunks; ++k) spec.chunks.push_back({(k * stages + s) * per, per});
    stage.push_back(std::make_unique<Transformer<float>>(c, spec));
    stage.back()->Initialize(11);
    stage.back()->Reserve(b.batch, b.seq, 1);
  }
  stage[0]->SetTokens(0, b.tokens.data());
  stage.back()->SetTargets(0, b.targets.data());
  size_t bytes = stage[0]->ActivationBytes();
  const float* x = nullptr;
  for (int64_t v = 0; v < stages * chunks; ++v) {  // virtual stage v = chunk v / P of stage v % P
    Transformer<float>& m = *stage[static_cast<size_t>(v % stages)];
    if (x) std::memcpy(m.Input(v / stages, 0), x, bytes);
    m.ForwardChunk(v / stages, 0);
    x = m.Output(v / stages, 0);
  }
  EXPECT_NEAR(stage.back()->Loss(0), r.loss, 1e-5 * r.loss);
  const float* dx = nullptr;
  for (int64_t v = stages * chunks - 1; v >= 0; --v) {
    Transformer<float>& m = *stage[static_cast<size_t>(v % stages)];
    if (dx) std::memcpy(m.OutputGrad(), dx, bytes);
    m.BackwardChunk(v / stages, 0);
    dx = m.InputGrad();
  }
  bool tied_copy = c.tied_embeddings && stages > 1;
  for (auto& m : stage) EXPECT_EQ(Compare(*m, r, 1e-4, tied_copy), "") << stages << " stages, " << chunks << " chunks";
  if (tied_copy) {
    // The embedding group's sum: the first stage's wte gradient plus the last stage's copy.
    const ParamLayout& first = stage[0]->layout();
    const ParamLayout& last = stage.back()->layout();
    const std::vector<float>& want = r.grads.at("wte");
    for (size_t i = 0; i < want.size(); ++i) {
      float sum = stage[0]->gradients()[static_cast<size_t>(first.wte) + i] +
                  stage.back()->gradients()[static_cast<size_t>(last.lm_head) + i];
      EXPECT_NEAR(sum, want[i], 1e-4 * 1.0) << "wte[" << i << "]";
    }
  }
}

TEST(ShardPipeline, TwoStagesMatchTheWholeModel) {
  CheckPipeline(Arch::Gpt2, 2, 1);
  CheckPipeline(Arch::Llama, 2, 1);
}
TEST(ShardPipeline, FourStagesMatchTheWholeModel) { CheckPipeline(Arch::Gpt2, 4, 1); }
TEST(ShardPipeline, InterleavedChunksMatchTheWholeModel) {
  CheckPipeline(Arch::Gpt2, 2, 2);
  CheckPipeline(Arch::Llama, 2, 2);
}

// Tensor-parallel ranks as processes, each comparing its shard.
void CheckTensorParallel(Arch arch, int ranks, bool sequence_parallel) {
  ModelConfig c = Tiny(arch);
  Batch b = MakeBatch(c);
  Reference r = Whole(c, b);
  auto reports = comm::testing::RunRanks(ranks, [&](comm::Communicator& world) -> std::string {
    ShardSpec spec{.tensor_rank = world.rank(), .tensor_size = world.size(), .sequence_parallel = sequence_parallel};
    Transformer<float> m(c, spec, cpu::Backend<float>(), &world);
    m.Initialize(11);
    // Twice: reused buffers, and gradients that accumulate (halved below).
    double loss = 0;
    for (int pass = 0; pass < 2; ++pass) {
      loss = m.Forward(b.tokens.data(), b.targets.data(), b.batch, b.seq);
      m.Backward();
      if (llvm::Error e = m.TakeError()) return llvm::toString(std::move(e));
    }
    m.FinishGradients();
    if (llvm::Error e = m.TakeError()) return llvm::toString(std::move(e));
    for (float& g : m.gradients()) g *= 0.5f;
    if (std::abs(loss - r.loss) > 1e-5 * r.loss) return fmt::format("loss {} vs {}", loss, r.loss);
    return Compare(m, r, 1e-4, false);
  });
  comm::testing::ExpectAllOk(reports);
}

TEST(ShardTensor, TwoRanksMatchTheWholeModel) {
  CheckTensorParallel(Arch::Gpt2, 2, false);
  CheckTensorParallel(Arch::Llama, 2, false);
}
TEST(ShardTensor, FourRanksMatchTheWholeModel) { CheckTensorParallel(Arch::Gpt2, 4, false); }
TEST(ShardTensor, SequenceParallelMatchesTheWholeModel) {
  CheckTensorParallel(Arch::Gpt2, 2, true);
  CheckTensorParallel(Arch::Llama, 2, true);
  CheckTensorParallel(Arch::Gpt2, 4, true);
}

}  // namespace
}  // namespace avf::model
