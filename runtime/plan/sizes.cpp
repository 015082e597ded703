#include "plan/sizes.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace avf::runtime {

namespace {

// a x b x ..., or nullopt when it overflows 64 bits or exceeds kMaxPlanCount.
auto Product(std::initializer_list<int64_t> factors) -> std::optional<int64_t> {
  int64_t out = 1;
  for (int64_t f : factors) {
    if (MulOverflows(out, f, &out) || out > kMaxPlanCount) return std::nullopt;
  }
  return out;
}

auto Sum(std::initializer_list<std::optional<int64_t>> terms) -> std::optional<int64_t> {
  int64_t out = 0;
  for (const std::optional<int64_t>& t : terms) {
    if (!t || AddOverflows(out, *t, &out) || out > kMaxPlanCount) return std::nullopt;
  }
  return out;
}

auto Bytes(int64_t bytes) -> std::string {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

auto CheckHeads(const PlanModel& m, Problems& p) -> bool {
  if (m.hidden < 1 || m.heads < 1 || m.kv_heads < 1 || m.hidden % m.heads != 0) {
    p.Addf("model.heads", "{} heads do not divide model.hidden = {} into equal heads", m.heads, m.hidden);
    return false;
  }
  if (m.heads % m.kv_heads != 0) {
    p.Addf("model.kv_heads", "{} key/value heads do not divide model.heads = {} (grouped-query attention)", m.kv_heads,
           m.heads);
    return false;
  }
  return true;
}

// One count the runtime derives: the key its message is filed under, what it
// is, and the formula over plan keys.
struct Derived {
  const char* key;
  const char* what;
  std::string formula;
  std::optional<int64_t> count;
};

auto ModelCounts(const RunPlan& plan) -> std::vector<Derived> {
  const PlanModel& m = plan.model;
  int64_t mlp = m.arch == Arch::Llama ? 3 : 2;  // weights of hidden x ffn: fc and proj, or gate, up and down
  // The query, key and value rows: hidden + 2 x kv_heads x head size, at most 3 x hidden.
  std::optional<int64_t> qkv_rows = Sum({m.hidden, Product({2, m.kv_heads, m.hidden / m.heads})});
  std::optional<int64_t> mlp_weights = Product({mlp, m.ffn, m.hidden});
  std::optional<int64_t> qkv = qkv_rows ? Product({*qkv_rows, m.hidden}) : std::nullopt;
  std::optional<int64_t> embedding = Product({m.vocab, m.hidden}), positions = Product({m.seq_len, m.hidden});
  std::optional<int64_t> layer =
      Sum({qkv, Product({m.hidden, m.hidden}), mlp_weights, qkv_rows, m.ffn, Product({6, m.hidden})});
  std::optional<int64_t> all = layer ? Product({m.layers, *layer}) : std::nullopt;
  const PlanLayout& l = plan.layout;
  return {
      {"model.vocab", "the token embedding", fmt::format("model.vocab x model.hidden = {} x {}", m.vocab, m.hidden),
       embedding},
      {"model.seq_len", "the position embedding",
       fmt::format("model.seq_len x model.hidden = {} x {}", m.seq_len, m.hidden), positions},
      {"model.hidden", "a layer's attention weights",
       fmt::format("(model.heads + 2 x model.kv_heads) x head size x model.hidden, with model.hidden = {}", m.hidden),
       qkv},
      {"model.ffn", "a layer's MLP weights",
       fmt::format("{} x model.ffn x model.hidden = {} x {} x {}", mlp, mlp, m.ffn, m.hidden), mlp_weights},
      {"model.layers", "the model's parameters",
       fmt::format("model.layers x the parameters of a layer + the embeddings = {} x {} + ...", m.layers,
                   layer ? fmt::format("{}", *layer) : std::string("(too many)")),
       all ? Sum({all, embedding, embedding, positions}) : std::nullopt},
      {"model.vocab", "a micro-batch's logits",
       fmt::format("layout.micro_batch x model.seq_len x model.vocab = {} x {} x {}", l.micro_batch, m.seq_len,
                   m.vocab),
       Product({l.micro_batch, m.seq_len, m.vocab})},
      {"model.seq_len", "a micro-batch's attention scores",
       fmt::format("layout.micro_batch x model.heads x model.seq_len^2 = {} x {} x {}^2", l.micro_batch, m.heads,
                   m.seq_len),
       Product({l.micro_batch, m.heads, m.seq_len, m.seq_len})},
      {"model.ffn", "a micro-batch's MLP activations",
       fmt::format("layout.micro_batch x model.seq_len x {} x model.ffn = {} x {} x {} x {}", mlp - 1, l.micro_batch,
                   m.seq_len, mlp - 1, m.ffn),
       Product({l.micro_batch, m.seq_len, mlp - 1, m.ffn})},
      {"training.micro_batches_per_step", "a step's tokens on one data rank",
       fmt::format("training.micro_batches_per_step x layout.micro_batch x model.seq_len = {} x {} x {}",
                   plan.training.micro_batches_per_step, l.micro_batch, m.seq_len),
       Product({plan.training.micro_batches_per_step, l.micro_batch, m.seq_len})},
  };
}

}  // namespace

void CheckSizes(const RunPlan& plan, Problems& p) {
  if (!CheckHeads(plan.model, p)) return;
  std::vector<Derived> counts = ModelCounts(plan);
  counts.push_back({"data.tokens", "the dataset's bytes",
                    fmt::format("data.tokens x data.token_bytes = {} x {}", plan.data.tokens, plan.data.token_bytes),
                    Product({plan.data.tokens, plan.data.token_bytes})});
  if (plan.validation) {
    counts.push_back({"validation.batches", "the tokens of one validation",
                      fmt::format("validation.batches x training.tokens_per_step = {} x {}", plan.validation->batches,
                                  plan.training.tokens_per_step),
                      Product({plan.validation->batches, plan.training.tokens_per_step})});
  }
  for (size_t s = 0; s < plan.stage_parameters.size(); ++s) {
    int64_t n = plan.stage_parameters[s];
    counts.push_back(
        {"stage_parameters", "a stage's parameters", fmt::format("stage_parameters[{}] = {}", s, n), Product({n})});
  }
  for (const Derived& d : counts) {
    if (d.count) continue;
    p.Addf(d.key, "{}, {}, is more than 2^50 elements (or overflows 64 bits): no machine holds it", d.what, d.formula);
    return;  // the first is enough: the others grow from the same values
  }
}

auto LeastRankBytes(const RunPlan& plan, int64_t rank) -> RankBytes {
  const PlanRank& r = plan.ranks[static_cast<size_t>(rank)];
  const PlanModel& m = plan.model;
  int64_t T = plan.layout.tensor, D = plan.layout.data, stage = plan.stage_parameters[static_cast<size_t>(r.pipeline)];
  int64_t slice = stage;
  if (plan.layout.zero >= 1 && D > 1) slice = plan.zero.slices[static_cast<size_t>(r.pipeline * D + r.data)].count;
  RankBytes b;
  b.weights = 4 * (plan.layout.zero >= 3 ? slice : stage);
  b.gradients = 4 * (plan.layout.zero >= 2 ? slice : stage);
  b.optimizer = 8 * slice;
  int64_t layers = 0;
  bool output = false;
  for (const PlanStage& s : plan.stages) {
    if (s.stage != r.pipeline) continue;
    layers += s.layers;
    output = output || s.output;
  }
  // Counts below kMaxPlanCount (CheckSizes): these products cannot overflow.
  int64_t scores = plan.layout.micro_batch * (m.heads / T) * m.seq_len * m.seq_len;
  int64_t logits = output ? plan.layout.micro_batch * m.seq_len * (m.vocab / T) : 0;
  b.activations = 4 * (std::min<int64_t>(layers, kMaxPlanCount / std::max<int64_t>(scores, 1)) * scores + logits);
  // The step's micro-batches: input and target ids, 4 bytes each.
  b.activations += 8 * plan.training.micro_batches_per_step * plan.layout.micro_batch * m.seq_len;
  return b;
}

auto CheckHostMemory(const RunPlan& plan, int64_t rank, int64_t host_bytes) -> llvm::Error {
  int64_t node = plan.ranks[static_cast<size_t>(rank)].node, total = 0, ranks = 0;
  for (const PlanRank& r : plan.ranks) {
    if (r.node != node) continue;
    if (AddOverflows(total, LeastRankBytes(plan, r.rank).total(), &total)) total = INT64_MAX;
    ++ranks;
  }
  if (total <= host_bytes) return llvm::Error::success();
  RankBytes b = LeastRankBytes(plan, rank);
  std::string mine = fmt::format("rank {}: weights {}, gradients {}, optimizer {}, activations {}", rank,
                                 Bytes(b.weights), Bytes(b.gradients), Bytes(b.optimizer), Bytes(b.activations));
  std::string message = fmt::format(
      "the plan's {} rank{} on node {} {} at least {} of memory ({}), but this host has {}; run it on a machine "
      "that holds them, or make the model or the micro-batch smaller",
      ranks, ranks == 1 ? "" : "s", node, ranks == 1 ? "needs" : "need", Bytes(total), mine, Bytes(host_bytes));
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto CgroupMemoryLimit(const std::string& mount, const std::string& path) -> std::optional<int64_t> {
  std::optional<int64_t> least;
  auto consider = [&least](const std::string& file) {
    std::ifstream in(file);
    std::string text;
    if (!(in >> text) || text == "max") return;
    int64_t bytes = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
    if (ec == std::errc() && end == text.data() + text.size() && bytes > 0)
      least = std::min(bytes, least.value_or(bytes));
  };
  for (std::string dir = path; !dir.empty();) {
    consider(mount + dir + "/memory.max");
    size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "" : dir.substr(0, slash);
  }
  consider(mount + "/memory.max");
  consider(mount + "/memory/memory.limit_in_bytes");
  return least;
}

auto HostMemoryBytes() -> int64_t {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  int64_t bytes = INT64_MAX;  // unknown: refuse nothing on this ground
  if (pages > 0 && page > 0 && MulOverflows(pages, page, &bytes)) bytes = INT64_MAX;
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(cgroups, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  if (path == "/") path.clear();
  return std::min(bytes, CgroupMemoryLimit("/sys/fs/cgroup", path).value_or(INT64_MAX));
}

}  // namespace avf::runtime
