// config.json of GPT2LMHeadModel and LlamaForCausalLM, and the folders that
// hold one with its model.safetensors.
#include <cmath>
#include <initializer_list>
#include <optional>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include "interop/files.h"
#include "interop/huggingface.h"

namespace avf::interop {

namespace {

using model::Arch;

auto Fail(const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", why.c_str());
}

// A config.json is a few kilobytes; this bounds what a hostile one costs.
constexpr uint64_t kMaxConfigBytes = 16 << 20;
constexpr int64_t kMaxSize = int64_t{1} << 24;

// Writes a double in its shortest exact spelling ("1e-05", "10000").
void Number(llvm::json::OStream& j, llvm::StringRef key, double value) {
  j.attributeBegin(key);
  j.rawValue(fmt::format("{}", value));
  j.attributeEnd();
}

void Gpt2Fields(llvm::json::OStream& j, const model::ModelConfig& c) {
  j.attributeArray("architectures", [&] { j.value("GPT2LMHeadModel"); });
  j.attribute("model_type", "gpt2");
  j.attribute("vocab_size", c.vocab);
  j.attribute("n_positions", c.seq_len);
  j.attribute("n_embd", c.hidden);
  j.attribute("n_layer", c.layers);
  j.attribute("n_head", c.heads);
  j.attribute("n_inner", c.ffn);
  j.attribute("activation_function", "gelu_new");
  Number(j, "layer_norm_epsilon", kNormEpsilon);
  for (const char* dropout : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) Number(j, dropout, 0.0);
  j.attribute("scale_attn_weights", true);
  j.attribute("scale_attn_by_inverse_layer_idx", false);
  j.attribute("reorder_and_upcast_attn", false);
}

void LlamaFields(llvm::json::OStream& j, const model::ModelConfig& c) {
  j.attributeArray("architectures", [&] { j.value("LlamaForCausalLM"); });
  j.attribute("model_type", "llama");
  j.attribute("vocab_size", c.vocab);
  j.attribute("max_position_embeddings", c.seq_len);
  j.attribute("hidden_size", c.hidden);
  j.attribute("intermediate_size", c.ffn);
  j.attribute("num_hidden_layers", c.layers);
  j.attribute("num_attention_heads", c.heads);
  j.attribute("num_key_value_heads", c.kv_heads);
  j.attribute("head_dim", c.head_dim());
  j.attribute("hidden_act", "silu");
  Number(j, "rms_norm_eps", kNormEpsilon);
  Number(j, "rope_theta", c.rope_theta);
  j.attribute("rope_scaling", nullptr);
  j.attribute("attention_bias", false);
  j.attribute("mlp_bias", false);
  Number(j, "attention_dropout", 0.0);
  j.attribute("pretraining_tp", 1);
}

// Typed reads of config.json's fields that keep the first problem: a missing
// required field, a wrong type, a size out of range, an option we do not compute.
class Fields {
 public:
  explicit Fields(const llvm::json::Object& o) : o_(o) {}

  // Absent or null: `fallback`, or a problem when there is none.
  auto Size(llvm::StringRef key, std::optional<int64_t> fallback = std::nullopt) -> int64_t {
    const llvm::json::Value* v = Get(key);
    if (!v && !fallback) return Problem(fmt::format("\"{}\" is missing", key.str()));
    if (!v) return *fallback;
    auto i = v->getAsInteger();
    if (!i || *i < 1 || *i > kMaxSize) Problem(fmt::format("\"{}\" is not an integer in [1, {}]", key.str(), kMaxSize));
    return i ? *i : 0;
  }
  auto Flag(llvm::StringRef key, bool fallback) -> bool {
    const llvm::json::Value* v = Get(key);
    if (!v) return fallback;
    auto b = v->getAsBoolean();
    if (!b) Problem(fmt::format("\"{}\" is not true or false", key.str()));
    return b ? *b : fallback;
  }
  auto Real(llvm::StringRef key, double fallback) -> double {
    const llvm::json::Value* v = Get(key);
    if (!v) return fallback;
    auto d = v->getAsNumber();
    if (!d) Problem(fmt::format("\"{}\" is not a number", key.str()));
    return d ? *d : fallback;
  }
  auto Text(llvm::StringRef key, llvm::StringRef fallback) -> std::string {
    const llvm::json::Value* v = Get(key);
    if (!v) return fallback.str();
    auto s = v->getAsString();
    if (!s) Problem(fmt::format("\"{}\" is not a string", key.str()));
    return s ? s->str() : fallback.str();
  }
  // A field our kernels fix: absent (then `fallback`) or `want`.
  void Require(llvm::StringRef key, bool want, bool fallback, llvm::StringRef why) {
    if (Flag(key, fallback) != want) Problem(fmt::format("\"{}\" must be {}: {}", key.str(), want, why.str()));
  }
  void RequireEpsilon(llvm::StringRef key, double fallback) {
    double eps = Real(key, fallback);
    if (std::abs(eps - kNormEpsilon) > 1e-6 * kNormEpsilon)
      Problem(fmt::format("\"{}\" is {}, but our norms use {}", key.str(), eps, kNormEpsilon));
  }
  auto Problem(const std::string& why) -> int64_t {
    if (error_.empty()) error_ = why;
    return 0;
  }
  auto Get(llvm::StringRef key) const -> const llvm::json::Value* {
    const llvm::json::Value* v = o_.get(key);
    return v && v->kind() != llvm::json::Value::Null ? v : nullptr;
  }
  auto error() const -> const std::string& { return error_; }

 private:
  const llvm::json::Object& o_;
  std::string error_;
};

auto Gpt2Config(Fields& f) -> model::ModelConfig {
  model::ModelConfig c;
  c.arch = Arch::Gpt2;
  c.vocab = f.Size("vocab_size"), c.seq_len = f.Size("n_positions"), c.hidden = f.Size("n_embd");
  c.layers = f.Size("n_layer"), c.heads = f.Size("n_head"), c.kv_heads = c.heads;
  c.ffn = f.Size("n_inner", 4 * c.hidden);
  c.tied_embeddings = f.Flag("tie_word_embeddings", true);
  std::string act = f.Text("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    f.Problem(
        fmt::format("\"activation_function\" is \"{}\", but our GELU is the tanh approximation (\"gelu_new\")", act));
  f.RequireEpsilon("layer_norm_epsilon", 1e-5);
  f.Require("scale_attn_weights", true, true, "our attention scales by 1/sqrt(head_dim)");
  f.Require("scale_attn_by_inverse_layer_idx", false, false, "our attention does not scale by layer");
  f.Require("add_cross_attention", false, false, "our blocks have no cross-attention");
  return c;
}

// RoPE's options: unscaled only. Newer files keep them in "rope_parameters",
// older ones in "rope_scaling" (null when unscaled).
void RopeOptions(Fields& f, model::ModelConfig& c) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const llvm::json::Value* v = f.Get(key);
    if (!v) continue;
    const llvm::json::Object* o = v->getAsObject();
    llvm::json::Object none;
    Fields rope(o ? *o : none);
    std::string type = rope.Text("rope_type", rope.Text("type", "default"));
    c.rope_theta = rope.Real("rope_theta", c.rope_theta);
    if (!rope.error().empty()) f.Problem(fmt::format("\"{}\": {}", key, rope.error()));
    if (!o || type != "default")
      f.Problem(fmt::format("\"{}\" asks for {} RoPE, but ours is unscaled", key, o ? type : "another"));
  }
}

auto LlamaConfig(Fields& f) -> model::ModelConfig {
  model::ModelConfig c;
  c.arch = Arch::Llama;
  c.vocab = f.Size("vocab_size"), c.hidden = f.Size("hidden_size"), c.ffn = f.Size("intermediate_size");
  c.layers = f.Size("num_hidden_layers"), c.heads = f.Size("num_attention_heads");
  c.kv_heads = f.Size("num_key_value_heads", c.heads), c.seq_len = f.Size("max_position_embeddings", 2048);
  c.tied_embeddings = f.Flag("tie_word_embeddings", false);
  c.rope_theta = f.Real("rope_theta", 10000.0);
  RopeOptions(f, c);
  if (std::string act = f.Text("hidden_act", "silu"); act != "silu")
    f.Problem(fmt::format("\"hidden_act\" is \"{}\", but our MLP is SwiGLU (\"silu\")", act));
  f.RequireEpsilon("rms_norm_eps", 1e-6);
  f.Require("attention_bias", false, false, "our Llama attention has no biases");
  f.Require("mlp_bias", false, false, "our Llama MLP has no biases");
  if (f.Get("head_dim") && c.heads > 0 && f.Size("head_dim") != c.hidden / c.heads)
    f.Problem(fmt::format("\"head_dim\" is not hidden_size / num_attention_heads ({})", c.hidden / c.heads));
  return c;
}

}  // namespace

auto HuggingFaceConfig(const model::ModelConfig& c, Dtype dtype) -> std::string {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream j(os, 2);
  j.objectBegin();
  if (c.arch == Arch::Gpt2) Gpt2Fields(j, c);
  else LlamaFields(j, c);
  Number(j, "initializer_range", 0.02);
  j.attribute("tie_word_embeddings", c.tied_embeddings);
  j.attribute("torch_dtype", dtype == Dtype::BF16 ? "bfloat16" : dtype == Dtype::F16 ? "float16" : "float32");
  j.objectEnd();
  os.flush();
  return text + "\n";
}

auto ConfigFromHuggingFace(llvm::StringRef json) -> llvm::Expected<model::ModelConfig> {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed) return Fail("the config is not JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object* o = parsed->getAsObject();
  if (!o) return Fail("the config is not a JSON object");
  Fields f(*o);
  std::string type = f.Text("model_type", "");
  if (type != "gpt2" && type != "llama")
    return Fail(type.empty() ? "the config has no \"model_type\" string"
                             : fmt::format("model_type \"{}\" is not supported: \"gpt2\" and \"llama\" are", type));
  model::ModelConfig c = type == "gpt2" ? Gpt2Config(f) : LlamaConfig(f);
  if (!f.error().empty()) return Fail(fmt::format("{} config: {}", type, f.error()));
  if (llvm::Error err = CheckConfig(c)) return err;
  return c;
}

auto ExportHuggingFace(const std::string& dir, const model::ModelConfig& c, const std::vector<HostTensor>& ours,
                       Dtype dtype) -> llvm::Error {
  llvm::Expected<std::vector<HostTensor>> hf = ToHuggingFace(c, ours);
  if (!hf) return hf.takeError();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return Fail(fmt::format("{}: cannot create the folder: {}", dir, ec.message()));
  if (llvm::Error err = WriteSafetensors(dir + "/model.safetensors", *hf, dtype, {{"format", "pt"}})) return err;
  std::string config = HuggingFaceConfig(c, dtype);
  return WriteAtomically(dir + "/config.json", "the model config",
                         [&](int fd) { return WriteAll(fd, config.data(), config.size()); });
}

auto ImportHuggingFace(const std::string& dir) -> llvm::Expected<ImportedModel> {
  std::string config_path = dir + "/config.json", weights = dir + "/model.safetensors";
  llvm::Expected<std::string> text = ReadSmallFile(config_path, "a config.json", kMaxConfigBytes);
  if (!text) return text.takeError();
  llvm::Expected<model::ModelConfig> c = ConfigFromHuggingFace(*text);
  if (!c) return Fail(fmt::format("{}: {}", config_path, llvm::toString(c.takeError())));
  if (!llvm::sys::fs::exists(weights) && llvm::sys::fs::exists(weights + ".index.json"))
    return Fail(
        fmt::format("{}: a sharded checkpoint (model.safetensors.index.json) is not supported; one "
                    "model.safetensors is",
                    dir));
  llvm::Expected<std::vector<HostTensor>> hf = ReadSafetensors(weights);
  if (!hf) return hf.takeError();
  llvm::Expected<std::vector<HostTensor>> ours = FromHuggingFace(*c, std::move(*hf));
  if (!ours) return Fail(fmt::format("{}: {}", weights, llvm::toString(ours.takeError())));
  return ImportedModel{*c, std::move(*ours)};
}

}  // namespace avf::interop
