// Hugging Face's config.json (runtime/interop/huggingface.h): ours round-trips,
// published configs read as the models they are, what our kernels do not
// compute is refused by name; and the tensor mapping's errors name the tensor
// and both shapes.
#include <gtest/gtest.h>

#include <algorithm>

#include "interop/huggingface.h"
#include "temp_dir.h"

namespace avf::interop {
namespace {

using model::Arch;
using model::ModelConfig;

auto Gpt2(bool tied) -> ModelConfig { return {Arch::Gpt2, 2, 48, 4, 4, 56, 72, 24, tied, 10000.0}; }
auto Llama(bool tied) -> ModelConfig { return {Arch::Llama, 2, 48, 6, 2, 40, 72, 24, tied, 500000.0}; }

template <typename T>
auto Error(llvm::Expected<T> value) -> std::string {
  return value ? "(no error)" : llvm::toString(value.takeError());
}

template <typename T>
auto Must(llvm::Expected<T> value) -> T {
  if (!value) ADD_FAILURE() << llvm::toString(value.takeError());
  return value ? std::move(*value) : T{};
}

TEST(HuggingFaceConfig, RoundTrips) {
  for (const ModelConfig& c : {Gpt2(true), Gpt2(false), Llama(true), Llama(false)}) {
    ModelConfig back = Must(ConfigFromHuggingFace(HuggingFaceConfig(c)));
    EXPECT_EQ(back.arch, c.arch);
    EXPECT_EQ(back.layers, c.layers);
    EXPECT_EQ(back.hidden, c.hidden);
    EXPECT_EQ(back.heads, c.heads);
    EXPECT_EQ(back.kv_heads, c.kv_heads);
    EXPECT_EQ(back.ffn, c.ffn);
    EXPECT_EQ(back.vocab, c.vocab);
    EXPECT_EQ(back.seq_len, c.seq_len);
    EXPECT_EQ(back.tied_embeddings, c.tied_embeddings);
    EXPECT_EQ(back.rope_theta, c.arch == Arch::Llama ? c.rope_theta : 10000.0);
  }
}

TEST(HuggingFaceConfig, SaysWhatOurKernelsCompute) {
  std::string gpt2 = HuggingFaceConfig(Gpt2(true), Dtype::BF16);
  for (const char* field : {R"("architectures": [)", R"("GPT2LMHeadModel")", R"("model_type": "gpt2")",
                            R"("activation_function": "gelu_new")", R"("layer_norm_epsilon": 1e-05)",
                            R"("n_inner": 56)", R"("n_positions": 24)", R"("tie_word_embeddings": true)",
                            R"("torch_dtype": "bfloat16")", R"("resid_pdrop": 0)"})
    EXPECT_NE(gpt2.find(field), std::string::npos) << field << " in\n" << gpt2;
  std::string llama = HuggingFaceConfig(Llama(false));
  for (const char* field :
       {R"("LlamaForCausalLM")", R"("model_type": "llama")", R"("rms_norm_eps": 1e-05)", R"("rope_theta": 500000)",
        R"("num_key_value_heads": 2)", R"("head_dim": 8)", R"("intermediate_size": 40)", R"("hidden_act": "silu")",
        R"("rope_scaling": null)", R"("attention_bias": false)", R"("tie_word_embeddings": false)",
        R"("torch_dtype": "float32")"})
    EXPECT_NE(llama.find(field), std::string::npos) << field << " in\n" << llama;
}

// The config.json files of GPT-2 (124M), Llama 2 7B and Llama 3 8B, less
// fields that change nothing here.
TEST(HuggingFaceConfig, ReadsPublishedConfigs) {
  ModelConfig gpt2 = Must(ConfigFromHuggingFace(R"({
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
    "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
    "summary_type": "cls_index", "task_specific_params": {"text-generation": {"do_sample": true}},
    "vocab_size": 50257})"));
  EXPECT_EQ(gpt2.ffn, 3072);
  EXPECT_TRUE(gpt2.tied_embeddings);
  EXPECT_EQ(model::LayoutOf(gpt2).total, 124'439'808);
  ModelConfig llama2 = Must(ConfigFromHuggingFace(R"({
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 4096,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "tie_word_embeddings": false,
    "torch_dtype": "float16", "vocab_size": 32000})"));
  EXPECT_EQ(model::LayoutOf(llama2).total, 6'738'415'616);
  EXPECT_EQ(llama2.rope_theta, 10000.0);
  ModelConfig llama3 = Must(ConfigFromHuggingFace(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})"));
  EXPECT_EQ(model::LayoutOf(llama3).total, 8'030'261'248);
  EXPECT_EQ(llama3.kv_heads, 8);
  EXPECT_EQ(llama3.seq_len, 8192);
}

auto LlamaJson(const std::string& extra) -> std::string {
  return R"({"model_type": "llama", "vocab_size": 72, "hidden_size": 48, "intermediate_size": 40,
             "num_hidden_layers": 2, "num_attention_heads": 6, "rms_norm_eps": 1e-05)" +
         extra + "}";
}
auto Gpt2Json(const std::string& extra) -> std::string {
  return R"({"model_type": "gpt2", "vocab_size": 72, "n_positions": 24, "n_embd": 48, "n_layer": 2)" + extra + "}";
}

TEST(HuggingFaceConfig, AcceptsEquivalentSpellings) {
  for (const std::string& json :
       {Gpt2Json(R"(, "n_head": 4, "activation_function": "gelu_pytorch_tanh", "n_inner": null)"),
        Gpt2Json(R"(, "n_head": 4, "layer_norm_epsilon": 9.999999747378752e-06, "reorder_and_upcast_attn": true)"),
        LlamaJson(R"(, "rope_scaling": {"rope_type": "default"}, "head_dim": 8, "pretraining_tp": 2)"),
        LlamaJson(R"(, "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0})")})
    EXPECT_EQ(Error(ConfigFromHuggingFace(json)), "(no error)") << json;
  EXPECT_EQ(Must(ConfigFromHuggingFace(LlamaJson(R"(, "rope_parameters": {"rope_theta": 1000.0})"))).rope_theta,
            1000.0);
}

TEST(HuggingFaceConfig, RefusesWhatOurKernelsDoNotCompute) {
  const std::pair<std::string, const char*> cases[] = {
      {"not json", "the config is not JSON"},
      {"[1]", "not a JSON object"},
      {"{}", "no \"model_type\""},
      {R"({"model_type": "bert"})", "model_type \"bert\" is not supported"},
      {Gpt2Json(""), "gpt2 config: \"n_head\" is missing"},
      {Gpt2Json(R"(, "n_head": 4, "activation_function": "gelu")"), "\"activation_function\" is \"gelu\""},
      {Gpt2Json(R"(, "n_head": 4, "layer_norm_epsilon": 1e-06)"), "\"layer_norm_epsilon\" is 1e-06"},
      {Gpt2Json(R"(, "n_head": 4, "scale_attn_by_inverse_layer_idx": true)"), "\"scale_attn_by_inverse_layer_idx\""},
      {Gpt2Json(R"(, "n_head": 4, "scale_attn_weights": false)"), "\"scale_attn_weights\" must be true"},
      {Gpt2Json(R"(, "n_head": 4, "add_cross_attention": true)"), "cross-attention"},
      {Gpt2Json(R"(, "n_head": 5)"), "must be a multiple of heads 5"},
      {LlamaJson(R"(, "rope_scaling": {"type": "linear", "factor": 2.0})"), "\"rope_scaling\" asks for linear RoPE"},
      {LlamaJson(R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0})"), "asks for llama3 RoPE"},
      {LlamaJson(R"(, "rope_scaling": 2)"), "asks for another RoPE"},
      {LlamaJson(R"(, "attention_bias": true)"), "\"attention_bias\" must be false"},
      {LlamaJson(R"(, "mlp_bias": true)"), "\"mlp_bias\" must be false"},
      {LlamaJson(R"(, "hidden_act": "gelu")"), "\"hidden_act\" is \"gelu\""},
      {LlamaJson(R"(, "head_dim": 16)"), "\"head_dim\" is not hidden_size / num_attention_heads (8)"},
      {LlamaJson(R"(, "num_key_value_heads": 4)"), "and heads of kv_heads 4"},
      {LlamaJson(R"(, "num_key_value_heads": 0)"), "\"num_key_value_heads\" is not an integer in [1, 16777216]"},
      {LlamaJson(R"(, "max_position_embeddings": "24")"), "\"max_position_embeddings\" is not an integer"},
      {LlamaJson(R"(, "tie_word_embeddings": "yes")"), "\"tie_word_embeddings\" is not true or false"},
      {LlamaJson(R"(, "rope_theta": "big")"), "\"rope_theta\" is not a number"},
      {LlamaJson(R"(, "rope_theta": -1)"), "rope_theta -1 is not a positive number"},
      {R"({"model_type": "llama", "vocab_size": 72, "hidden_size": 48, "intermediate_size": 40,
          "num_hidden_layers": 2, "num_attention_heads": 6})",
       "\"rms_norm_eps\" is 1e-06, but our norms use 1e-05"},
      {R"({"model_type": "llama", "vocab_size": 72, "hidden_size": 42, "intermediate_size": 40,
          "num_hidden_layers": 2, "num_attention_heads": 6, "rms_norm_eps": 1e-05})",
       "head_dim 7 is odd"},
      {R"({"model_type": "llama", "vocab_size": 16777216, "hidden_size": 16777216, "intermediate_size": 16777216,
          "num_hidden_layers": 4096, "num_attention_heads": 16, "rms_norm_eps": 1e-05})",
       "more than the 2^50"},
  };
  for (const auto& [json, why] : cases) {
    std::string message = Error(ConfigFromHuggingFace(json));
    EXPECT_NE(message.find(why), std::string::npos) << json << "\n  gave: " << message;
  }
}

// ---- the mapping's errors ----

auto Theirs(const ModelConfig& c) -> std::vector<HostTensor> {
  std::vector<float> flat(static_cast<size_t>(model::LayoutOf(c).total), 0.5f);
  return Must(ToHuggingFace(c, Must(OurTensors(c, flat))));
}

auto Without(std::vector<HostTensor> ts, const std::string& name) -> std::vector<HostTensor> {
  ts.erase(std::remove_if(ts.begin(), ts.end(), [&](const HostTensor& t) { return t.name == name; }), ts.end());
  return ts;
}

TEST(HuggingFace, ImportNamesTheMissingOrMisshapenTensor) {
  ModelConfig c = Gpt2(true);
  EXPECT_NE(Error(FromHuggingFace(c, Without(Theirs(c), "transformer.h.1.mlp.c_fc.bias")))
                .find("Hugging Face tensor \"transformer.h.1.mlp.c_fc.bias\" is missing (expected shape [56])"),
            std::string::npos);
  std::vector<HostTensor> hf = Theirs(c);
  for (HostTensor& t : hf) {
    if (t.name == "transformer.h.0.attn.c_attn.weight") t.shape = {144, 48};
  }
  EXPECT_NE(Error(FromHuggingFace(c, hf))
                .find("\"transformer.h.0.attn.c_attn.weight\": expected shape [48, 144], "
                      "found [144, 48]"),
            std::string::npos);
  EXPECT_NE(Error(FromHuggingFace(Llama(false), Without(Theirs(Llama(false)), "lm_head.weight")))
                .find("\"lm_head.weight\" is missing (expected shape [72, 48])"),
            std::string::npos);
}

TEST(HuggingFace, ImportIgnoresBuffersAndTakesUnprefixedNames) {
  ModelConfig c = Gpt2(true);
  std::vector<HostTensor> hf = Theirs(c);
  hf.push_back({"transformer.h.0.attn.bias", {1, 1, 24, 24}, std::vector<float>(576, 1.0f)});
  hf.push_back({"transformer.h.1.attn.masked_bias", {}, {-1e4f}});
  hf.push_back({"lm_head.weight", {72, 48}, std::vector<float>(72 * 48, 0.5f)});  // tied: equal to wte
  EXPECT_EQ(Error(FromHuggingFace(c, hf)), "(no error)");
  for (HostTensor& t : hf) {
    if (t.name.rfind("transformer.", 0) == 0) t.name.erase(0, 12);  // as GPT2Model saves them
  }
  EXPECT_EQ(Error(FromHuggingFace(c, hf)), "(no error)");
  std::vector<HostTensor> llama = Theirs(Llama(false));
  llama.push_back({"model.layers.1.self_attn.rotary_emb.inv_freq", {4}, {1, 2, 3, 4}});
  EXPECT_EQ(Error(FromHuggingFace(Llama(false), llama)), "(no error)");
}

TEST(HuggingFace, ImportRefusesUnexpectedTensors) {
  ModelConfig c = Gpt2(true);
  std::vector<HostTensor> hf = Theirs(c);
  hf.push_back({"transformer.h.0.attn.rotary", {2}, {1, 2}});
  EXPECT_NE(Error(FromHuggingFace(c, hf)).find("unexpected Hugging Face tensor \"transformer.h.0.attn.rotary\""),
            std::string::npos);
  hf = Theirs(c);
  hf.push_back({"lm_head.weight", {72, 48}, std::vector<float>(72 * 48, 0.25f)});
  EXPECT_NE(Error(FromHuggingFace(c, hf)).find("lm_head.weight is not equal to transformer.wte.weight"),
            std::string::npos);
  hf = Theirs(c);
  hf.push_back({"wpe.weight", {24, 48}, std::vector<float>(24 * 48)});
  EXPECT_NE(Error(FromHuggingFace(c, hf)).find("\"transformer.wpe.weight\" appears twice"), std::string::npos);
  hf = Theirs(Llama(true));
  EXPECT_NE(Error(FromHuggingFace(Gpt2(true), hf)).find("is missing"), std::string::npos);
}

TEST(HuggingFace, ExportRefusesWhatItCannotExpress) {
  ModelConfig gqa = Gpt2(true);
  gqa.kv_heads = 2;
  EXPECT_NE(Error(HuggingFaceMapping(gqa)).find("GPT2LMHeadModel has no grouped-query attention"), std::string::npos);
  ModelConfig c = Gpt2(true);
  std::vector<float> flat(static_cast<size_t>(model::LayoutOf(c).total));
  std::vector<HostTensor> ours = Must(OurTensors(c, flat));
  EXPECT_NE(Error(ToHuggingFace(c, Without(ours, "h.0.ln_1.bias"))).find("our tensor \"h.0.ln_1.bias\" is missing"),
            std::string::npos);
  std::vector<HostTensor> extra = ours;
  extra.push_back({"lm_head.weight", {72, 48}, std::vector<float>(72 * 48)});
  EXPECT_NE(Error(ToHuggingFace(c, extra)).find("\"lm_head.weight\" is not a parameter of this GPT-2 model"),
            std::string::npos);
  std::vector<HostTensor> flat_wte = ours;
  flat_wte[0].shape = {72 * 48};
  EXPECT_NE(Error(ToHuggingFace(c, flat_wte)).find("\"wte\": expected shape [72, 48], found [3456]"),
            std::string::npos);
  std::vector<HostTensor> twice = ours;
  twice.push_back(ours[0]);
  EXPECT_NE(Error(ToHuggingFace(c, twice)).find("our tensor \"wte\" appears twice"), std::string::npos);
  EXPECT_NE(Error(OurTensors(c, std::vector<float>(5))).find("the parameter buffer holds 5 values"), std::string::npos);
  EXPECT_NE(Error(OurFlat(c, Without(ours, "wpe"))).find("our tensor \"wpe\" is missing"), std::string::npos);
}

TEST(HuggingFace, ImportFolderErrorsNameTheFile) {
  testing::TempDir dir("avf-interop");
  EXPECT_NE(Error(ImportHuggingFace(dir.path())).find(dir.path() + "/config.json: cannot open"), std::string::npos);
  {
    std::FILE* f = std::fopen((dir.path() + "/config.json").c_str(), "w");
    std::fputs(HuggingFaceConfig(Gpt2(true)).c_str(), f);
    std::fclose(f);
    f = std::fopen((dir.path() + "/model.safetensors.index.json").c_str(), "w");
    std::fclose(f);
  }
  EXPECT_NE(Error(ImportHuggingFace(dir.path())).find("a sharded checkpoint"), std::string::npos);
  ASSERT_FALSE(llvm::errorToBool(WriteSafetensors(dir.path() + "/model.safetensors",
                                                  Without(Theirs(Gpt2(true)), "transformer.ln_f.bias"), Dtype::F32)));
  EXPECT_NE(Error(ImportHuggingFace(dir.path()))
                .find(dir.path() + "/model.safetensors: Hugging Face tensor \"transformer.ln_f.bias\" is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace avf::interop
