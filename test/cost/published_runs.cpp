// avf-calibrate: the time model against measured training runs.
//
//   avf-calibrate published-runs.csv [--max-median-error PCT]
//
// For every row of ../shared/data/published-runs.csv that describes a dense
// bf16/fp16 run of a known GPU with a complete layout, prints the predicted
// and measured tokens/s per GPU, then the median absolute error. Exits 1 when
// that median exceeds the bound (15% by default), 2 on unreadable input.
// Rows are mapped by fixed rules (below), never tuned one by one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost/counts.h"
#include "cost/predict.h"

namespace {

using Row = std::map<std::string, std::string>;

// RFC 4180 records: quoted fields may hold commas, doubled quotes and newlines.
auto ReadCsv(std::istream& in) -> std::vector<std::vector<std::string>> {
  std::vector<std::vector<std::string>> records(1);
  std::string field;
  bool quoted = false;
  char c = 0;
  while (in.get(c)) {
    if (quoted) {
      if (c == '"' && in.peek() == '"') field += static_cast<char>(in.get());
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      records.back().push_back(std::move(field));
      field.clear();
      records.emplace_back();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || !records.back().empty()) records.back().push_back(std::move(field));
  if (records.back().empty()) records.pop_back();
  return records;
}

auto Number(const Row& r, const std::string& key) -> std::optional<double> {
  auto it = r.find(key);
  if (it == r.end() || it->second.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str()) return std::nullopt;
  return v;
}

auto Has(const Row& r, const std::string& key, const std::string& needle) -> bool {
  auto it = r.find(key);
  return it != r.end() && it->second.find(needle) != std::string::npos;
}

auto I(double v) -> int64_t { return static_cast<int64_t>(std::llround(v)); }

// Hardware by GPU generation: the stdlib figures (stdlib/hardware.avf) and
// the network those clusters used, one NIC per GPU: HDR 200 Gb/s for A100
// (Selene, DGX A100), NDR/RoCE 400 Gb/s for H100 and H200.
auto HardwareFor(const Row& r) -> std::optional<avf::cost::Hardware> {
  avf::cost::Hardware hw;
  hw.gpus_per_node = 8;
  hw.nics_per_node = 8;
  hw.nvlink_latency = 1.9e-6;
  hw.network_latency = 4e-6;
  hw.nodes = 1 << 20;
  if (Has(r, "gpu", "A100")) {
    bool small = Has(r, "gpu", "40GB");
    hw.gpu_memory = small ? 40e9 : 80e9;
    hw.peak_flops = 312e12;
    hw.hbm_bandwidth = small ? 1555e9 : 2039e9;
    hw.nvlink_bandwidth = 300e9;
    hw.nic_bandwidth = 25e9;
  } else if (Has(r, "gpu", "H100") || Has(r, "gpu", "H200")) {
    bool h200 = Has(r, "gpu", "H200");
    hw.gpu_memory = h200 ? 141e9 : 80e9;
    hw.peak_flops = 989.4e12;
    hw.hbm_bandwidth = h200 ? 4.8e12 : 3.35e12;
    hw.nvlink_bandwidth = 450e9;
    hw.nic_bandwidth = 50e9;
  } else {
    return std::nullopt;
  }
  return hw;
}

struct Case {
  avf::cost::Workload work;
  avf::cost::Layout layout;
  avf::cost::Hardware hw;
  double measured = 0;  // tokens/s per GPU
};

auto Recompute(const Row& r) -> avf::cost::Recompute {
  if (Has(r, "recompute", "full")) return avf::cost::Recompute::Full;
  if (Has(r, "recompute", "selective")) return avf::cost::Recompute::Selective;
  return avf::cost::Recompute::None;
}

auto Shape(const Row& r) -> avf::cost::ModelShape {
  avf::cost::ModelShape m;
  bool llama = Has(r, "model", "Llama") || Has(r, "model", "LLaMA");
  m.arch = llama ? avf::cost::Arch::Llama : avf::cost::Arch::Gpt2;
  m.layers = I(*Number(r, "layers"));
  m.hidden = I(*Number(r, "hidden"));
  m.heads = I(*Number(r, "heads"));
  // Grouped-query attention with 8 key/value heads: every Llama 3 model and
  // Llama 2 70B (the model cards); the others use full multi-head attention.
  bool gqa = Has(r, "model", "Llama 3") || (Has(r, "model", "Llama 2") && Has(r, "model", "70B"));
  m.kv_heads = gqa ? 8 : m.heads;
  m.ffn = Number(r, "ffn") ? I(*Number(r, "ffn")) : avf::cost::DefaultFfn(m.arch, m.hidden);
  m.vocab = I(*Number(r, "vocab"));
  m.seq_len = I(*Number(r, "seq_len"));
  m.tied_embeddings = !llama;
  return m;
}

// Measured tokens/s per GPU, from whichever figure the row gives. Megatron's
// 2021 TFLOP/s count the recomputed forward (paper eq. 3); the others count
// model FLOPs with the same convention as ModelFlopsPerToken.
auto Measured(const Row& r, const avf::cost::ModelShape& m, double peak) -> std::optional<double> {
  if (auto tps = Number(r, "measured_tokens_per_s_per_gpu")) return *tps;
  double per_token = avf::cost::ModelFlopsPerToken(m);
  if (Has(r, "notes", "HFU-style")) {
    double l = m.layers, h = m.hidden, s = m.seq_len, v = m.vocab;
    per_token = 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  }
  if (auto tflops = Number(r, "measured_tflops_per_gpu")) return *tflops * 1e12 / per_token;
  if (auto mfu = Number(r, "mfu_pct")) return *mfu / 100 * peak / per_token;
  return std::nullopt;
}

// Facts the notes state in fixed words: the interleaved schedule's chunk
// count; FSDP that keeps parameters gathered from forward to backward (the
// traffic of ZeRO-2); Megatron's 2021 "local" DDP, which reduced gradients
// after the backward pass instead of overlapping it; tensor-parallel
// communication overlapped with compute (--tp-comm-overlap, async TP).
void ApplyNotes(const Row& r, Case& c) {
  const std::string& notes = r.at("notes");
  size_t chunks = notes.find("model chunks/stage");
  size_t open = notes.rfind("(=", chunks);
  if (Has(r, "notes", "interleaved") && chunks != std::string::npos && open != std::string::npos) {
    c.layout.schedule = avf::cost::Schedule::Interleaved;
    c.layout.virtual_stages = std::strtol(notes.c_str() + open + 2, nullptr, 10);
  }
  if (Has(r, "notes", "not resharded after forward")) c.layout.zero = 2;
  if (Has(r, "notes", "DDP impl=local")) c.work.overlap_data_comm = false;
  for (const char* overlap : {"--tp-comm-overlap", "async TP", "AsyncTP"}) {
    if (Has(r, "notes", overlap)) c.work.overlap_tensor_comm = true;
  }
}

// Either a case to predict or why the row is left out.
auto Build(const Row& r, Case& c) -> std::string {
  auto hw = HardwareFor(r);
  if (!hw) return "GPU not one the stdlib describes";
  for (const char* fp8 : {"Float8", "float8", "FP8", "fp8"}) {
    if (Has(r, "notes", fp8)) return "FP8 run: MFU against the bf16 peak is not comparable";
  }
  for (const char* key :
       {"layers", "hidden", "heads", "vocab", "seq_len", "tp", "pp", "dp", "global_batch_seqs", "num_gpus"}) {
    if (!Number(r, key)) return fmt::format("no {}", key);
  }
  c.hw = *hw;
  c.work.model = Shape(r);
  c.layout.tensor = I(*Number(r, "tp"));
  c.layout.pipeline = I(*Number(r, "pp"));
  c.layout.data = I(*Number(r, "dp"));
  c.work.gpus = I(*Number(r, "num_gpus"));
  if (c.layout.world() != c.work.gpus) return "tp x pp x dp is not the GPU count (context parallel)";
  c.work.global_batch = I(*Number(r, "global_batch_seqs"));
  c.layout.micro_batch = Number(r, "micro_batch") ? I(*Number(r, "micro_batch")) : 1;
  c.layout.zero = Number(r, "zero_stage") ? static_cast<int>(*Number(r, "zero_stage")) : 0;
  c.layout.recompute = Recompute(r);
  c.layout.sequence_parallel = Has(r, "sequence_parallel", "yes");
  ApplyNotes(r, c);
  auto measured = Measured(r, c.work.model, hw->peak_flops);
  if (!measured) return "no measured throughput";
  c.measured = *measured;
  return "";
}

auto Median(std::vector<double> v) -> double {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

auto main(int argc, char** argv) -> int {
  if (argc < 2) {
    std::fprintf(stderr, "usage: avf-calibrate published-runs.csv [--max-median-error PCT]\n");
    return 2;
  }
  double bound = 15;
  if (argc == 4 && std::string(argv[2]) == "--max-median-error") bound = std::strtod(argv[3], nullptr);
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "avf-calibrate: cannot read %s\n", argv[1]);
    return 2;
  }
  auto records = ReadCsv(in);
  if (records.size() < 2) {
    std::fprintf(stderr, "avf-calibrate: %s has no rows\n", argv[1]);
    return 2;
  }
  std::vector<double> errors;
  fmt::print("{:<4} {:<34} {:>6} {:>3} {:>3} {:>5} {:>12} {:>12} {:>8}\n", "row", "model", "gpus", "tp", "pp", "dp",
             "predicted", "measured", "error");
  for (size_t i = 1; i < records.size(); ++i) {
    Row row;
    for (size_t k = 0; k < records[0].size() && k < records[i].size(); ++k) row[records[0][k]] = records[i][k];
    Case c;
    std::string skip = Build(row, c);
    std::string model = row["model"].substr(0, 34);
    if (!skip.empty()) {
      fmt::print("{:<4} {:<34} skipped: {}\n", i, model, skip);
      continue;
    }
    avf::cost::Prediction p = avf::cost::Predict(c.work, c.layout, c.hw);
    double predicted = p.tokens_per_s / static_cast<double>(c.work.gpus);
    double error = (predicted - c.measured) / c.measured;
    errors.push_back(std::fabs(error));
    fmt::print("{:<4} {:<34} {:>6} {:>3} {:>3} {:>5} {:>12.1f} {:>12.1f} {:>+7.1f}%\n", i, model, c.work.gpus,
               c.layout.tensor, c.layout.pipeline, c.layout.data, predicted, c.measured, 100 * error);
  }
  if (errors.empty()) {
    std::fprintf(stderr, "avf-calibrate: no usable rows\n");
    return 2;
  }
  double median = 100 * Median(errors);
  fmt::print("rows compared: {}; median absolute error {:.1f}% (bound {:.1f}%); mean {:.1f}%\n", errors.size(), median,
             bound, 100 * std::accumulate(errors.begin(), errors.end(), 0.0) / errors.size());
  return median <= bound ? 0 : 1;
}
