// GPT-2 and Llama through Hugging Face's layout (runtime/interop/huggingface.h):
// docs/huggingface.md's tables are the mapping, ours -> theirs -> ours is the
// identity, the RoPE permutation keeps every attention score, a model exported
// to a folder and imported into another gives the same loss bit for bit, and
// config.json round-trips, reads published configs and refuses what our
// kernels do not compute.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cpu/kernels.h"
#include "interop/huggingface.h"
#include "model/transformer.h"
#include "numeric/bf16.h"
#include "temp_dir.h"

namespace avf::interop {
namespace {

using model::Arch;
using model::ModelConfig;
using testing::TempDir;

auto Gpt2(bool tied) -> ModelConfig { return {Arch::Gpt2, 2, 48, 4, 4, 56, 72, 24, tied, 10000.0}; }
auto Llama(bool tied) -> ModelConfig { return {Arch::Llama, 2, 48, 6, 2, 40, 72, 24, tied, 10000.0}; }

auto Bits(const std::vector<float>& v) -> std::vector<uint32_t> {
  std::vector<uint32_t> bits;
  for (float f : v) bits.push_back(std::bit_cast<uint32_t>(f));
  return bits;
}

auto RandomFlat(const ModelConfig& c, uint32_t seed) -> std::vector<float> {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> flat(static_cast<size_t>(model::LayoutOf(c).total));
  for (float& f : flat) f = normal(rng);
  return flat;
}

template <typename T>
auto Must(llvm::Expected<T> value) -> T {
  if (!value) ADD_FAILURE() << llvm::toString(value.takeError());
  return value ? std::move(*value) : T{};
}

auto Named(const std::vector<HostTensor>& tensors, const std::string& name) -> const HostTensor& {
  for (const HostTensor& t : tensors) {
    if (t.name == name) return t;
  }
  static const HostTensor none;
  ADD_FAILURE() << "no tensor " << name;
  return none;
}

// ---- docs/huggingface.md's tables against HuggingFaceMapping ----

auto Trim(std::string s) -> std::string {
  size_t a = s.find_first_not_of(" `"), b = s.find_last_not_of(" `");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The cells of each row of the first table after the heading "## <heading>".
auto DocTable(const std::string& heading) -> std::vector<std::vector<std::string>> {
  std::ifstream in(AVF_HF_DOC);
  std::string line;
  while (std::getline(in, line) && line.rfind("## " + heading, 0) != 0) {}
  while (std::getline(in, line) && line.rfind("| ours", 0) != 0) {}
  std::getline(in, line);  // |---|
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line) && line.rfind("|", 0) == 0) {
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(Trim(cell));
    rows.push_back(cells);
  }
  return rows;
}

// "Q+2K" with the sizes of `c`.
auto Eval(const std::string& expr, const ModelConfig& c, int64_t positions) -> int64_t {
  const std::map<char, int64_t> sizes{{'C', c.hidden},
                                      {'V', c.vocab},
                                      {'P', positions},
                                      {'F', c.ffn},
                                      {'Q', c.heads * c.head_dim()},
                                      {'K', c.kv_heads * c.head_dim()}};
  int64_t sum = 0;
  std::stringstream ss(expr);
  for (std::string term; std::getline(ss, term, '+');) {
    term = Trim(term);
    size_t digits = term.find_first_not_of("0123456789");
    int64_t factor = digits == 0 ? 1 : std::stoll(term.substr(0, digits));
    sum += digits == std::string::npos ? factor : factor * sizes.at(term[digits]);
  }
  return sum;
}

auto EvalShape(const std::string& text, const ModelConfig& c) -> std::string {
  std::string inner = text.substr(1, text.size() - 2), out;
  std::stringstream ss(inner);
  for (std::string dim; std::getline(ss, dim, ',');)
    out += (out.empty() ? "" : ",") + std::to_string(Eval(dim, c, c.seq_len));
  return "[" + out + "]";
}

auto Key(const std::string& ours, const std::string& our_shape, const std::string& hf, const std::string& hf_shape,
         const std::string& transform) -> std::string {
  return ours + " " + our_shape + " -> " + hf + " " + hf_shape + " " + transform;
}

auto Expand(const std::string& name, int64_t layer) -> std::string {
  std::string out = name;
  for (size_t at; (at = out.find(".N.")) != std::string::npos;) out.replace(at, 3, "." + std::to_string(layer) + ".");
  return out;
}

// Every row of the table for `c`, one per layer for the block's rows.
auto DocRows(const std::string& heading, const ModelConfig& c) -> std::vector<std::string> {
  std::vector<std::string> keys;
  for (const std::vector<std::string>& r : DocTable(heading)) {
    EXPECT_EQ(r.size(), 5u) << heading;
    if (r.size() != 5) continue;
    std::string transform = r[4];
    if (size_t note = transform.find(" (untied only)"); note != std::string::npos) {
      if (c.tied_embeddings) continue;
      transform.erase(note);
    }
    if (transform.rfind("rows ", 0) == 0) {
      size_t colon = transform.find(':'), comma = transform.find(',');
      int64_t a = Eval(transform.substr(5, colon - 5), c, c.seq_len);
      int64_t b = Eval(transform.substr(colon + 1, comma == std::string::npos ? std::string::npos : comma - colon - 1),
                       c, c.seq_len);
      transform =
          (comma == std::string::npos ? "rows " : "rope rows ") + std::to_string(a) + "+" + std::to_string(b - a);
    }
    bool block = r[0].find(".N.") != std::string::npos;
    for (int64_t layer = 0; layer < (block ? c.layers : 1); ++layer)
      keys.push_back(Key(Expand(r[0], layer), EvalShape(r[1], c), Expand(r[2], layer), EvalShape(r[3], c), transform));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

auto ShapeKey(const std::vector<int64_t>& shape) -> std::string {
  std::string out;
  for (int64_t d : shape) out += (out.empty() ? "" : ",") + std::to_string(d);
  return "[" + out + "]";
}

auto CodeRows(const ModelConfig& c) -> std::vector<std::string> {
  std::vector<std::string> keys;
  for (const TensorMapping& m : Must(HuggingFaceMapping(c))) {
    std::string transform = m.transform == Transform::Copy        ? "copy"
                            : m.transform == Transform::Transpose ? "transpose"
                            : m.transform == Transform::Rows      ? "rows "
                                                                  : "rope rows ";
    if (m.transform == Transform::Rows || m.transform == Transform::RopeRows)
      transform += std::to_string(m.first_row) + "+" + std::to_string(m.row_count);
    keys.push_back(Key(m.ours, ShapeKey(m.our_shape), m.hf, ShapeKey(m.hf_shape), transform));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(HuggingFaceDoc, TablesAreTheMapping) {
  for (bool tied : {true, false}) {
    EXPECT_EQ(DocRows("GPT-2", Gpt2(tied)), CodeRows(Gpt2(tied))) << "tied " << tied;
    EXPECT_EQ(DocRows("Llama", Llama(tied)), CodeRows(Llama(tied))) << "tied " << tied;
  }
  EXPECT_EQ(CodeRows(Gpt2(true)).size(), 2 + 12 * 2 + 2u);
  EXPECT_EQ(CodeRows(Llama(false)).size(), 1 + 9 * 2 + 2u);
}

// ---- ours -> theirs -> ours ----

void ExpectRoundTrip(const ModelConfig& c) {
  std::vector<float> flat = RandomFlat(c, 5);
  std::vector<HostTensor> ours = Must(OurTensors(c, flat));
  std::vector<HostTensor> hf = Must(ToHuggingFace(c, ours));
  std::vector<HostTensor> back = Must(FromHuggingFace(c, hf));
  ASSERT_EQ(back.size(), ours.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(back[i].name, ours[i].name);
    EXPECT_EQ(back[i].shape, ours[i].shape) << ours[i].name;
    EXPECT_EQ(Bits(back[i].data), Bits(ours[i].data)) << ours[i].name;
  }
  EXPECT_EQ(Bits(Must(OurFlat(c, back))), Bits(flat));
}

TEST(HuggingFace, Gpt2TiedRoundTripIsBitwise) { ExpectRoundTrip(Gpt2(true)); }
TEST(HuggingFace, LlamaGqaUntiedRoundTripIsBitwise) { ExpectRoundTrip(Llama(false)); }
TEST(HuggingFace, Gpt2UntiedAndLlamaTiedRoundTrip) {
  ExpectRoundTrip(Gpt2(false));
  ExpectRoundTrip(Llama(true));
}

TEST(HuggingFace, Gpt2Conv1dWeightsAreTransposed) {
  ModelConfig c = Gpt2(true);
  std::vector<HostTensor> ours = Must(OurTensors(c, RandomFlat(c, 1)));
  std::vector<HostTensor> hf = Must(ToHuggingFace(c, ours));
  const HostTensor& qkv = Named(ours, "h.1.attn.qkv.weight");
  const HostTensor& c_attn = Named(hf, "transformer.h.1.attn.c_attn.weight");
  ASSERT_EQ(c_attn.shape, (std::vector<int64_t>{48, 144}));
  for (int64_t out = 0; out < 144; ++out) {
    for (int64_t in = 0; in < 48; ++in) ASSERT_EQ(c_attn.data[in * 144 + out], qkv.data[out * 48 + in]);
  }
  EXPECT_EQ(Bits(Named(hf, "transformer.h.1.attn.c_attn.bias").data), Bits(Named(ours, "h.1.attn.qkv.bias").data));
  EXPECT_EQ(Bits(Named(hf, "transformer.wte.weight").data), Bits(Named(ours, "wte").data));
}

TEST(HuggingFace, LlamaRowsAreSplitAndRopeRowsPermuted) {
  ModelConfig c = Llama(false);
  std::vector<HostTensor> ours = Must(OurTensors(c, RandomFlat(c, 2)));
  std::vector<HostTensor> hf = Must(ToHuggingFace(c, ours));
  const std::vector<float>& qkv = Named(ours, "h.0.attn.qkv.weight").data;
  const std::vector<float>& gate_up = Named(ours, "h.0.mlp.gate_up.weight").data;
  auto row = [](const std::vector<float>& m, int64_t r) { return std::vector<float>(&m[r * 48], &m[(r + 1) * 48]); };
  const int64_t D = 8, Q = 48, K = 16, F = 40;
  const std::vector<float>& q = Named(hf, "model.layers.0.self_attn.q_proj.weight").data;
  const std::vector<float>& k = Named(hf, "model.layers.0.self_attn.k_proj.weight").data;
  for (int64_t h = 0; h < 6; ++h) {
    for (int64_t a = 0; a < 2; ++a) {
      for (int64_t i = 0; i < D / 2; ++i) {
        EXPECT_EQ(Bits(row(q, h * D + a * D / 2 + i)), Bits(row(qkv, h * D + 2 * i + a)));
        if (h < 2) {
          EXPECT_EQ(Bits(row(k, h * D + a * D / 2 + i)), Bits(row(qkv, Q + h * D + 2 * i + a)));
        }
      }
    }
  }
  const std::vector<float>& v = Named(hf, "model.layers.0.self_attn.v_proj.weight").data;
  for (int64_t r = 0; r < K; ++r) EXPECT_EQ(Bits(row(v, r)), Bits(row(qkv, Q + K + r)));
  const std::vector<float>& gate = Named(hf, "model.layers.0.mlp.gate_proj.weight").data;
  const std::vector<float>& up = Named(hf, "model.layers.0.mlp.up_proj.weight").data;
  for (int64_t r = 0; r < F; ++r) {
    EXPECT_EQ(Bits(row(gate, r)), Bits(row(gate_up, r)));
    EXPECT_EQ(Bits(row(up, r)), Bits(row(gate_up, F + r)));
  }
}

// Hugging Face's Llama RoPE from its definition: x * cos + rotate_half(x) *
// sin, rotate_half(x) = (-x2, x1) for the halves x1, x2 of each head.
void RotateHalf(std::vector<double>& x, int64_t pos, int64_t heads, int64_t d, double theta) {
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < d / 2; ++i) {
      double angle = static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      double& x1 = x[h * d + i];
      double& x2 = x[h * d + d / 2 + i];
      double r1 = x1 * std::cos(angle) - x2 * std::sin(angle), r2 = x2 * std::cos(angle) + x1 * std::sin(angle);
      x1 = r1, x2 = r2;
    }
  }
}

// Rows [first, first + rows) of w (. x 48) times x.
auto Project(const std::vector<float>& w, int64_t first, int64_t rows, const std::vector<double>& x)
    -> std::vector<double> {
  std::vector<double> y(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < 48; ++j) y[r] += static_cast<double>(w[(first + r) * 48 + j]) * x[j];
  }
  return y;
}

// The attention scores q(t1) . k(t2) of every query head and position pair.
auto Scores(const std::vector<std::vector<double>>& q, const std::vector<std::vector<double>>& k)
    -> std::vector<double> {
  std::vector<double> scores;
  for (size_t t1 = 0; t1 < q.size(); ++t1) {
    for (size_t t2 = 0; t2 <= t1; ++t2) {
      for (int64_t h = 0; h < 6; ++h) {
        double s = 0;
        for (int64_t e = 0; e < 8; ++e) s += q[t1][h * 8 + e] * k[t2][h / 3 * 8 + e];
        scores.push_back(s);
      }
    }
  }
  return scores;
}

TEST(HuggingFace, RopePermutationKeepsEveryAttentionScore) {
  ModelConfig c = Llama(false);
  c.rope_theta = 500000.0;
  std::vector<HostTensor> ours = Must(OurTensors(c, RandomFlat(c, 3)));
  std::vector<HostTensor> hf = Must(ToHuggingFace(c, ours));
  const std::vector<float>& qkv = Named(ours, "h.1.attn.qkv.weight").data;
  const int64_t T = 7;
  std::mt19937 rng(4);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> q_ours, k_ours, q_hf, k_hf, q_plain, k_plain;
  std::vector<float> q_rows(static_cast<size_t>(T * 48)), k_rows(static_cast<size_t>(T * 16));
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> x(48);
    for (double& e : x) e = normal(rng);
    std::vector<double> q = Project(qkv, 0, 48, x), k = Project(qkv, 48, 16, x);
    for (int64_t e = 0; e < 48; ++e) q_rows[t * 48 + e] = static_cast<float>(q[e]);
    for (int64_t e = 0; e < 16; ++e) k_rows[t * 16 + e] = static_cast<float>(k[e]);
    q_hf.push_back(Project(Named(hf, "model.layers.1.self_attn.q_proj.weight").data, 0, 48, x));
    k_hf.push_back(Project(Named(hf, "model.layers.1.self_attn.k_proj.weight").data, 0, 16, x));
    RotateHalf(q_hf.back(), t, 6, 8, c.rope_theta);
    RotateHalf(k_hf.back(), t, 2, 8, c.rope_theta);
    q_plain.push_back(q), k_plain.push_back(k);  // our rows taken without the permutation
    RotateHalf(q_plain.back(), t, 6, 8, c.rope_theta);
    RotateHalf(k_plain.back(), t, 2, 8, c.rope_theta);
  }
  cpu::RopeForward(q_rows.data(), 1, T, 6, 8, c.rope_theta);
  cpu::RopeForward(k_rows.data(), 1, T, 2, 8, c.rope_theta);
  for (int64_t t = 0; t < T; ++t) {
    q_ours.emplace_back(&q_rows[t * 48], &q_rows[(t + 1) * 48]);
    k_ours.emplace_back(&k_rows[t * 16], &k_rows[(t + 1) * 16]);
  }
  std::vector<double> expected = Scores(q_ours, k_ours), theirs = Scores(q_hf, k_hf), plain = Scores(q_plain, k_plain);
  double worst_plain = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(theirs[i], expected[i], 1e-4 * (1 + std::abs(expected[i]))) << i;
    worst_plain = std::max(worst_plain, std::abs(plain[i] - expected[i]));
  }
  EXPECT_GT(worst_plain, 0.1) << "without the permutation the scores would differ";
}

// ---- a model exported to a folder and imported into another ----

auto Tokens(const ModelConfig& c, int64_t n, uint32_t seed) -> std::vector<uint32_t> {
  std::mt19937 rng(seed);
  std::vector<uint32_t> t(static_cast<size_t>(n));
  for (uint32_t& e : t) e = static_cast<uint32_t>(rng() % static_cast<uint32_t>(c.vocab));
  return t;
}

void ExpectSameConfig(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.ffn, b.ffn);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
}

void ExpectSameLossAfterImport(const ModelConfig& c, Dtype dtype) {
  model::Transformer<float> a(c);
  a.Initialize(11);
  std::vector<float> params(a.parameters().begin(), a.parameters().end());
  TempDir dir("avf-interop");
  std::string folder = dir.path() + "/hf";
  ASSERT_FALSE(llvm::errorToBool(ExportHuggingFace(folder, c, Must(OurTensors(c, params)), dtype)));
  ImportedModel imported = Must(ImportHuggingFace(folder));
  ExpectSameConfig(imported.config, c);
  std::vector<float> loaded = Must(OurFlat(imported.config, imported.tensors));
  if (dtype == Dtype::BF16) {
    for (float& p : params) p = numeric::ToFloat(numeric::ToBf16(p));
    for (size_t i = 0; i < params.size(); ++i) a.parameters()[i] = params[i];
  }
  ASSERT_EQ(Bits(loaded), Bits(params));
  model::Transformer<float> b(imported.config);
  b.Initialize(12);
  std::copy(loaded.begin(), loaded.end(), b.parameters().begin());
  std::vector<uint32_t> tokens = Tokens(c, 2 * c.seq_len, 5), targets = Tokens(c, 2 * c.seq_len, 6);
  double loss_a = a.Forward(tokens.data(), targets.data(), 2, c.seq_len);
  double loss_b = b.Forward(tokens.data(), targets.data(), 2, c.seq_len);
  EXPECT_EQ(std::bit_cast<uint64_t>(loss_a), std::bit_cast<uint64_t>(loss_b)) << loss_a << " vs " << loss_b;
  EXPECT_GT(loss_a, 3.0);  // about ln(72): an untrained model
}

TEST(HuggingFace, Gpt2ExportImportGivesTheSameLoss) { ExpectSameLossAfterImport(Gpt2(true), Dtype::F32); }
TEST(HuggingFace, LlamaExportImportGivesTheSameLoss) { ExpectSameLossAfterImport(Llama(false), Dtype::F32); }
TEST(HuggingFace, Bf16ExportIsTheRoundedModel) {
  ExpectSameLossAfterImport(Gpt2(false), Dtype::BF16);
  ExpectSameLossAfterImport(Llama(true), Dtype::BF16);
}

TEST(HuggingFace, ExportedFolderIsWhatFromPretrainedReads) {
  ModelConfig c = Gpt2(true);
  TempDir dir("avf-interop");
  ASSERT_FALSE(llvm::errorToBool(ExportHuggingFace(dir.path(), c, Must(OurTensors(c, RandomFlat(c, 7))), Dtype::F32)));
  SafetensorsFile file = Must(ReadSafetensorsFile(dir.path() + "/model.safetensors"));
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(file.tensors.front().name, "transformer.wte.weight");
  for (const HostTensor& t : file.tensors) EXPECT_NE(t.name, "lm_head.weight") << "tied: no lm_head";
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/config.json"));
}

}  // namespace
}  // namespace avf::interop
