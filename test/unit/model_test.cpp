// The transformer: its parameter layout counts what the published models
// have (and what the compiler's cost model counts), its whole-model backward
// matches finite differences of the loss in fp64 for both architectures, and
// gradient descent on a fixed batch lowers the loss.
#include <gtest/gtest.h>

#include <cmath>

#include "model/transformer.h"

namespace avf::model {
namespace {

auto Gpt2Small() -> ModelConfig { return {Arch::Gpt2, 12, 768, 12, 12, 3072, 50257, 1024, true, 10000.0}; }

TEST(ModelLayout, PublishedParameterCounts) {
  EXPECT_EQ(LayoutOf(Gpt2Small()).total, 124'439'808);  // GPT-2 124M
  ModelConfig llama2{Arch::Llama, 32, 4096, 32, 32, 11008, 32000, 4096, false, 10000.0};
  EXPECT_EQ(LayoutOf(llama2).total, 6'738'415'616);  // Llama 2 7B
  ModelConfig llama3{Arch::Llama, 32, 4096, 32, 8, 14336, 128256, 8192, false, 500000.0};
  EXPECT_EQ(LayoutOf(llama3).total, 8'030'261'248);  // Llama 3 8B (GQA)
}

TEST(ModelLayout, TensorsTileTheBuffer) {
  ParamLayout l = LayoutOf(Gpt2Small());
  int64_t next = 0;
  for (const ParamTensor& t : l.tensors) {
    EXPECT_EQ(t.offset, next) << t.name;
    next += t.size;
  }
  EXPECT_EQ(next, l.total);
  EXPECT_EQ(l.lm_head, -1);  // tied
  EXPECT_EQ(l.tensors[2].name, "h.0.ln_1.weight");
}

auto Tiny(Arch arch) -> ModelConfig {
  ModelConfig c{arch, 2, 8, 2, arch == Arch::Llama ? 1 : 2, 12, 11, 5, arch == Arch::Gpt2, 10000.0};
  return c;
}

// d(loss)/d(every parameter) against central differences.
void CheckModelGradients(Arch arch) {
  Transformer<double> m(Tiny(arch));
  m.Initialize(7);
  // Larger weights than the 0.02 initialisation, so every path carries gradient.
  for (double& p : m.parameters()) p *= arch == Arch::Gpt2 ? 8.0 : 6.0;
  std::vector<uint32_t> tokens{1, 4, 2, 9, 0, 3, 3, 10, 5, 7}, targets{4, 2, 9, 0, 3, 3, 10, 5, 7, 1};
  m.Forward(tokens.data(), targets.data(), 2, 5);
  m.ZeroGradients();
  m.Backward();
  std::vector<double> analytic(m.gradients().begin(), m.gradients().end());
  auto& p = m.parameters();
  int64_t checked = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    double saved = p[i], h = 1e-6;
    p[i] = saved + h;
    double up = m.Forward(tokens.data(), targets.data(), 2, 5);
    p[i] = saved - h;
    double down = m.Forward(tokens.data(), targets.data(), 2, 5);
    p[i] = saved;
    double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic[i], numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << "parameter " << i;
    checked += analytic[i] != 0.0;
  }
  EXPECT_GT(checked, static_cast<int64_t>(p.size() * 9 / 10)) << "most parameters should get a gradient";
}

TEST(Model, Gpt2GradientsMatchFiniteDifferences) { CheckModelGradients(Arch::Gpt2); }
TEST(Model, LlamaGradientsMatchFiniteDifferences) { CheckModelGradients(Arch::Llama); }

TEST(Model, SameSeedSameModel) {
  Transformer<float> a(Tiny(Arch::Gpt2)), b(Tiny(Arch::Gpt2));
  a.Initialize(42);
  b.Initialize(42);
  auto values = [](Transformer<float>& m) { return std::vector<float>(m.parameters().begin(), m.parameters().end()); };
  EXPECT_EQ(values(a), values(b));
  b.Initialize(43);
  EXPECT_NE(values(a), values(b));
}

TEST(Model, GradientDescentLowersTheLoss) {
  for (Arch arch : {Arch::Gpt2, Arch::Llama}) {
    Transformer<float> m(Tiny(arch));
    m.Initialize(1);
    std::vector<uint32_t> tokens{1, 4, 2, 9, 0, 3, 3, 10, 5, 7}, targets{4, 2, 9, 0, 3, 3, 10, 5, 7, 1};
    double first = m.Forward(tokens.data(), targets.data(), 2, 5);
    EXPECT_NEAR(first, std::log(11.0), 0.1) << "an untrained model predicts about uniformly";
    double loss = first;
    for (int step = 0; step < 200; ++step) {
      m.ZeroGradients();
      m.Backward();
      for (size_t i = 0; i < m.parameters().size(); ++i) m.parameters()[i] -= 0.5f * m.gradients()[i];
      loss = m.Forward(tokens.data(), targets.data(), 2, 5);
    }
    EXPECT_LT(loss, first / 2) << (arch == Arch::Gpt2 ? "gpt2" : "llama");
  }
}

}  // namespace
}  // namespace avf::model
