#include "interop/huggingface.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace avf::interop {

namespace {

using Shape = std::vector<int64_t>;
using model::Arch;

auto Fail(const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", why.c_str());
}

auto ArchName(Arch a) -> const char* { return a == Arch::Gpt2 ? "GPT-2" : "Llama"; }
auto ClassName(Arch a) -> const char* { return a == Arch::Gpt2 ? "GPT2LMHeadModel" : "LlamaForCausalLM"; }

// Each size at most 2^24 and the whole model under 2^50 parameters, so no
// product of sizes overflows.
constexpr int64_t kMaxSize = int64_t{1} << 24;

auto Elements(const Shape& s) -> int64_t {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

auto IsVector(llvm::StringRef name) -> bool {
  return name.endswith(".bias") || name.endswith(".ln_1.weight") || name.endswith(".ln_2.weight") ||
         name == "ln_f.weight";
}

auto OurShape(const model::ParamTensor& t) -> Shape {
  return IsVector(t.name) ? Shape{t.part.rows} : Shape{t.part.rows, t.part.cols};
}

auto CheckSizes(const model::ModelConfig& c) -> llvm::Error {
  const std::pair<const char*, int64_t> sizes[] = {{"layers", c.layers},     {"hidden", c.hidden}, {"heads", c.heads},
                                                   {"kv_heads", c.kv_heads}, {"ffn", c.ffn},       {"vocab", c.vocab},
                                                   {"seq_len", c.seq_len}};
  for (const auto& [name, value] : sizes) {
    if (value < 1 || value > kMaxSize)
      return Fail(fmt::format("{} config: {} = {} is not in [1, {}]", ArchName(c.arch), name, value, kMaxSize));
  }
  if (c.hidden % c.heads != 0 || c.heads % c.kv_heads != 0)
    return Fail(fmt::format("{} config: hidden {} must be a multiple of heads {}, and heads of kv_heads {}",
                            ArchName(c.arch), c.hidden, c.heads, c.kv_heads));
  double C = static_cast<double>(c.hidden), F = static_cast<double>(c.ffn), kv = 2.0 * c.kv_heads * c.head_dim();
  double block = C * (C + kv) + C * C + 3 * C * F + 8 * C + F;
  double total = static_cast<double>(c.layers) * block + (2.0 * c.vocab + static_cast<double>(c.seq_len)) * C;
  if (total > std::ldexp(1.0, 50))
    return Fail(
        fmt::format("{} config: about {:.3g} parameters, more than the 2^50 this reads", ArchName(c.arch), total));
  return llvm::Error::success();
}

// Appends the mappings of one model in the order of our layout.
class Mapper {
 public:
  void Same(const std::string& ours, const Shape& shape, const std::string& hf) {
    out.push_back({ours, shape, hf, shape, Transform::Copy});
  }
  void Transposed(const std::string& ours, int64_t rows, int64_t cols, const std::string& hf) {
    out.push_back({ours, {rows, cols}, hf, {cols, rows}, Transform::Transpose});
  }
  void Rows(const std::string& ours, const Shape& shape, const std::string& hf, int64_t first, int64_t count,
            bool rope) {
    out.push_back({ours, shape, hf, {count, shape[1]}, rope ? Transform::RopeRows : Transform::Rows, first, count});
  }
  std::vector<TensorMapping> out;
};

void Gpt2Mapping(const model::ModelConfig& c, Mapper& m) {
  int64_t C = c.hidden, F = c.ffn;
  m.Same("wte", {c.vocab, C}, "transformer.wte.weight");
  m.Same("wpe", {c.seq_len, C}, "transformer.wpe.weight");
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string ours = "h." + std::to_string(i) + ".", hf = "transformer." + ours;
    m.Same(ours + "ln_1.weight", {C}, hf + "ln_1.weight");
    m.Same(ours + "ln_1.bias", {C}, hf + "ln_1.bias");
    m.Transposed(ours + "attn.qkv.weight", 3 * C, C, hf + "attn.c_attn.weight");
    m.Same(ours + "attn.qkv.bias", {3 * C}, hf + "attn.c_attn.bias");
    m.Transposed(ours + "attn.proj.weight", C, C, hf + "attn.c_proj.weight");
    m.Same(ours + "attn.proj.bias", {C}, hf + "attn.c_proj.bias");
    m.Same(ours + "ln_2.weight", {C}, hf + "ln_2.weight");
    m.Same(ours + "ln_2.bias", {C}, hf + "ln_2.bias");
    m.Transposed(ours + "mlp.fc.weight", F, C, hf + "mlp.c_fc.weight");
    m.Same(ours + "mlp.fc.bias", {F}, hf + "mlp.c_fc.bias");
    m.Transposed(ours + "mlp.proj.weight", C, F, hf + "mlp.c_proj.weight");
    m.Same(ours + "mlp.proj.bias", {C}, hf + "mlp.c_proj.bias");
  }
  m.Same("ln_f.weight", {C}, "transformer.ln_f.weight");
  m.Same("ln_f.bias", {C}, "transformer.ln_f.bias");
  if (!c.tied_embeddings) m.Same("lm_head.weight", {c.vocab, C}, "lm_head.weight");
}

void LlamaMapping(const model::ModelConfig& c, Mapper& m) {
  int64_t C = c.hidden, F = c.ffn, Q = c.heads * c.head_dim(), K = c.kv_heads * c.head_dim();
  m.Same("wte", {c.vocab, C}, "model.embed_tokens.weight");
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string ours = "h." + std::to_string(i) + ".", hf = "model.layers." + std::to_string(i) + ".";
    Shape qkv{Q + 2 * K, C}, gate_up{2 * F, C};
    m.Same(ours + "ln_1.weight", {C}, hf + "input_layernorm.weight");
    m.Rows(ours + "attn.qkv.weight", qkv, hf + "self_attn.q_proj.weight", 0, Q, true);
    m.Rows(ours + "attn.qkv.weight", qkv, hf + "self_attn.k_proj.weight", Q, K, true);
    m.Rows(ours + "attn.qkv.weight", qkv, hf + "self_attn.v_proj.weight", Q + K, K, false);
    m.Same(ours + "attn.proj.weight", {C, Q}, hf + "self_attn.o_proj.weight");
    m.Same(ours + "ln_2.weight", {C}, hf + "post_attention_layernorm.weight");
    m.Rows(ours + "mlp.gate_up.weight", gate_up, hf + "mlp.gate_proj.weight", 0, F, false);
    m.Rows(ours + "mlp.gate_up.weight", gate_up, hf + "mlp.up_proj.weight", F, F, false);
    m.Same(ours + "mlp.down.weight", {C, F}, hf + "mlp.down_proj.weight");
  }
  m.Same("ln_f.weight", {C}, "model.norm.weight");
  if (!c.tied_embeddings) m.Same("lm_head.weight", {c.vocab, C}, "lm_head.weight");
}

// The mapping names exactly our layout's tensors, in its order, with its shapes.
auto CheckAgainstLayout(const model::ModelConfig& c, const std::vector<TensorMapping>& mapping) -> llvm::Error {
  model::ParamLayout l = model::LayoutOf(c);
  size_t next = 0;
  for (size_t i = 0; i < mapping.size(); ++i) {
    if (i > 0 && mapping[i].ours == mapping[i - 1].ours) continue;
    const model::ParamTensor* t = next < l.tensors.size() ? &l.tensors[next++] : nullptr;
    if (!t || t->name != mapping[i].ours || OurShape(*t) != mapping[i].our_shape)
      return Fail(fmt::format("the {} mapping does not follow the model's layout at \"{}\" {} (the layout has \"{}\")",
                              ArchName(c.arch), mapping[i].ours, ShapeText(mapping[i].our_shape),
                              t ? t->name : "nothing"));
  }
  if (next != l.tensors.size())
    return Fail(fmt::format("the {} mapping has no \"{}\"", ArchName(c.arch), l.tensors[next].name));
  return llvm::Error::success();
}

// Our row of local row r of the mapping's tensor (RopeRows: head h's row
// a * half + i is our row 2i + a of that head).
auto OurRow(const TensorMapping& m, int64_t head_dim, int64_t r) -> int64_t {
  if (m.transform != Transform::RopeRows) return m.first_row + r;
  int64_t half = head_dim / 2, head = r / head_dim, k = r % head_dim;
  return m.first_row + head * head_dim + 2 * (k % half) + k / half;
}

// Moves the mapping's elements from ours into theirs (to_hf) or back.
void Move(const TensorMapping& m, int64_t head_dim, const float* from, float* to, bool to_hf) {
  if (m.transform == Transform::Copy) {
    std::copy(from, from + Elements(m.hf_shape), to);
  } else if (m.transform == Transform::Transpose) {
    int64_t rows = m.our_shape[0], cols = m.our_shape[1];
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        if (to_hf) to[j * rows + i] = from[i * cols + j];
        else to[i * cols + j] = from[j * rows + i];
      }
    }
  } else {
    int64_t cols = m.our_shape[1];
    for (int64_t r = 0; r < m.row_count; ++r) {
      int64_t ours = OurRow(m, head_dim, r) * cols, theirs = r * cols;
      if (to_hf) std::copy(from + ours, from + ours + cols, to + theirs);
      else std::copy(from + theirs, from + theirs + cols, to + ours);
    }
  }
}

// Tensors by name; `side` ("our", "Hugging Face") names them in errors.
auto IndexByName(const std::vector<HostTensor>& tensors, const char* side)
    -> llvm::Expected<std::map<std::string, const HostTensor*>> {
  std::map<std::string, const HostTensor*> index;
  for (const HostTensor& t : tensors) {
    if (!index.emplace(t.name, &t).second)
      return Fail(fmt::format("{} tensor \"{}\" appears twice", side, NameText(t.name)));
  }
  return index;
}

auto Find(const std::map<std::string, const HostTensor*>& index, const std::string& name, const Shape& shape,
          const char* side) -> llvm::Expected<const HostTensor*> {
  auto it = index.find(name);
  if (it == index.end())
    return Fail(fmt::format("{} tensor \"{}\" is missing (expected shape {})", side, name, ShapeText(shape)));
  const HostTensor& t = *it->second;
  if (t.shape != shape)
    return Fail(
        fmt::format("{} tensor \"{}\": expected shape {}, found {}", side, name, ShapeText(shape), ShapeText(t.shape)));
  if (static_cast<int64_t>(t.data.size()) != Elements(shape))
    return Fail(
        fmt::format("{} tensor \"{}\" of shape {} holds {} values", side, name, ShapeText(shape), t.data.size()));
  return &t;
}

auto Ignorable(llvm::StringRef name) -> bool {
  return name.endswith(".attn.bias") || name.endswith(".attn.masked_bias") || name.endswith(".rotary_emb.inv_freq");
}

// Theirs by their full names: a name without the base model's prefix is
// taken as with it when only that is expected.
auto IndexTheirs(const model::ModelConfig& c, const std::vector<HostTensor>& hf, const std::set<std::string>& expected)
    -> llvm::Expected<std::map<std::string, const HostTensor*>> {
  std::string prefix = c.arch == Arch::Gpt2 ? "transformer." : "model.";
  std::map<std::string, const HostTensor*> index;
  for (const HostTensor& t : hf) {
    std::string name = !expected.count(t.name) && expected.count(prefix + t.name) ? prefix + t.name : t.name;
    if (!index.emplace(name, &t).second)
      return Fail(
          fmt::format("Hugging Face tensor \"{}\" appears twice (with and without \"{}\")", NameText(name), prefix));
  }
  return index;
}

// Every tensor of theirs that the mapping does not take is ignorable.
auto CheckExtras(const model::ModelConfig& c, const std::map<std::string, const HostTensor*>& index,
                 const std::set<std::string>& expected, const std::string& embedding) -> llvm::Error {
  for (const auto& [name, t] : index) {
    if (expected.count(name) || Ignorable(name)) continue;
    if (name == "lm_head.weight" && c.tied_embeddings) {
      auto e = index.find(embedding);
      if (e == index.end() || e->second->shape != t->shape || e->second->data != t->data)
        return Fail(fmt::format("the config ties the embeddings, but lm_head.weight is not equal to {}", embedding));
      continue;
    }
    return Fail(fmt::format("unexpected Hugging Face tensor \"{}\" of shape {}: not a tensor of this {} config's {}",
                            NameText(name), ShapeText(t->shape), ArchName(c.arch), ClassName(c.arch)));
  }
  return llvm::Error::success();
}

}  // namespace

auto CheckConfig(const model::ModelConfig& c) -> llvm::Error {
  if (llvm::Error err = CheckSizes(c)) return err;
  if (c.arch == Arch::Gpt2 && c.kv_heads != c.heads)
    return Fail(
        fmt::format("GPT-2 config with {} key/value heads for {} heads: GPT2LMHeadModel has no grouped-query "
                    "attention",
                    c.kv_heads, c.heads));
  if (c.arch == Arch::Llama && c.head_dim() % 2 != 0)
    return Fail(fmt::format("Llama config: head_dim {} is odd, and RoPE rotates pairs", c.head_dim()));
  if (c.arch == Arch::Llama && !(std::isfinite(c.rope_theta) && c.rope_theta > 0))
    return Fail(fmt::format("Llama config: rope_theta {} is not a positive number", c.rope_theta));
  return llvm::Error::success();
}

auto HuggingFaceMapping(const model::ModelConfig& c) -> llvm::Expected<std::vector<TensorMapping>> {
  if (llvm::Error err = CheckConfig(c)) return err;
  Mapper m;
  if (c.arch == Arch::Gpt2) Gpt2Mapping(c, m);
  else LlamaMapping(c, m);
  if (llvm::Error err = CheckAgainstLayout(c, m.out)) return err;
  return std::move(m.out);
}

auto OurTensors(const model::ModelConfig& c, llvm::ArrayRef<float> flat) -> llvm::Expected<std::vector<HostTensor>> {
  if (llvm::Error err = CheckSizes(c)) return err;
  model::ParamLayout l = model::LayoutOf(c);
  if (static_cast<int64_t>(flat.size()) != l.total)
    return Fail(
        fmt::format("the parameter buffer holds {} values, the {} model {}", flat.size(), ArchName(c.arch), l.total));
  std::vector<HostTensor> out;
  for (const model::ParamTensor& t : l.tensors) {
    const float* first = flat.data() + t.offset;
    out.push_back({t.name, OurShape(t), std::vector<float>(first, first + t.size)});
  }
  return out;
}

auto OurFlat(const model::ModelConfig& c, const std::vector<HostTensor>& ours) -> llvm::Expected<std::vector<float>> {
  if (llvm::Error err = CheckSizes(c)) return err;
  llvm::Expected<std::map<std::string, const HostTensor*>> index = IndexByName(ours, "our");
  if (!index) return index.takeError();
  model::ParamLayout l = model::LayoutOf(c);
  for (const model::ParamTensor& t : l.tensors) {
    if (llvm::Error err = Find(*index, t.name, OurShape(t), "our").takeError()) return err;
  }
  std::set<std::string> known;
  for (const model::ParamTensor& t : l.tensors) known.insert(t.name);
  for (const auto& [name, t] : *index) {
    if (!known.count(name))
      return Fail(
          fmt::format("our tensor \"{}\" is not a parameter of this {} model", NameText(name), ArchName(c.arch)));
  }
  std::vector<float> flat(static_cast<size_t>(l.total));
  for (const model::ParamTensor& t : l.tensors) {
    const std::vector<float>& data = index->at(t.name)->data;
    std::copy(data.begin(), data.end(), flat.begin() + t.offset);
  }
  return flat;
}

auto ToHuggingFace(const model::ModelConfig& c, const std::vector<HostTensor>& ours)
    -> llvm::Expected<std::vector<HostTensor>> {
  llvm::Expected<std::vector<TensorMapping>> mapping = HuggingFaceMapping(c);
  if (!mapping) return mapping.takeError();
  llvm::Expected<std::map<std::string, const HostTensor*>> index = IndexByName(ours, "our");
  if (!index) return index.takeError();
  std::set<std::string> used;
  for (const TensorMapping& m : *mapping) {
    if (llvm::Error err = Find(*index, m.ours, m.our_shape, "our").takeError()) return err;
    used.insert(m.ours);
  }
  for (const auto& [name, t] : *index) {
    if (!used.count(name))
      return Fail(
          fmt::format("our tensor \"{}\" is not a parameter of this {} model", NameText(name), ArchName(c.arch)));
  }
  std::vector<HostTensor> out;
  for (const TensorMapping& m : *mapping) {
    out.push_back({m.hf, m.hf_shape, std::vector<float>(static_cast<size_t>(Elements(m.hf_shape)))});
    Move(m, c.head_dim(), index->at(m.ours)->data.data(), out.back().data.data(), true);
  }
  return out;
}

auto FromHuggingFace(const model::ModelConfig& c, std::vector<HostTensor> hf)
    -> llvm::Expected<std::vector<HostTensor>> {
  llvm::Expected<std::vector<TensorMapping>> mapping = HuggingFaceMapping(c);
  if (!mapping) return mapping.takeError();
  std::set<std::string> expected;
  for (const TensorMapping& m : *mapping) expected.insert(m.hf);
  llvm::Expected<std::map<std::string, const HostTensor*>> index = IndexTheirs(c, hf, expected);
  if (!index) return index.takeError();
  for (const TensorMapping& m : *mapping) {
    if (llvm::Error err = Find(*index, m.hf, m.hf_shape, "Hugging Face").takeError()) return err;
  }
  if (llvm::Error err = CheckExtras(c, *index, expected, mapping->front().hf)) return err;
  std::vector<HostTensor> out;
  for (const TensorMapping& m : *mapping) {
    HostTensor* theirs = &hf[static_cast<size_t>(index->at(m.hf) - hf.data())];
    if (m.transform == Transform::Copy) {
      out.push_back({m.ours, m.our_shape, std::move(theirs->data)});
      continue;
    }
    if (out.empty() || out.back().name != m.ours)
      out.push_back({m.ours, m.our_shape, std::vector<float>(static_cast<size_t>(Elements(m.our_shape)))});
    Move(m, c.head_dim(), theirs->data.data(), out.back().data.data(), false);
  }
  return out;
}

}  // namespace avf::interop
