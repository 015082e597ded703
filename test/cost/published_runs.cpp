// avf-calibrate: the time and memory model against measured training runs.
//
//   avf-calibrate published-runs.csv [--max-median-error PCT] [--targets] [--fit] [--bands]
//
// For every row of ../shared/data/published-runs.csv that describes a dense
// bf16/fp16 run of a known GPU with a complete layout, prints the predicted
// and measured tokens/s per GPU and the predicted memory, then the median
// absolute error overall, for the ZeRO-3/FSDP rows and for Korthikanti's
// Table 5, and how many rows that trained are predicted not to fit. Exits 1
// when the median exceeds the bound (15% by default), when a row that
// trained is predicted not to fit, or (--targets) when a class misses its
// target; 2 on bad input. --fit fits the model's constants (cost::Calibration)
// over the rows and prints them; --bands prints calibration_bands.def.
// Rows are mapped by fixed rules (below), never tuned one by one.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
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

// The number right after `key` in `text` ("iter_time_s=1.42" → 1.42), or
// before it ("96GB" → 96 with key "GB").
auto NumberAfter(const std::string& text, const std::string& key) -> std::optional<double> {
  size_t at = text.find(key);
  if (at == std::string::npos) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str() + at + key.size(), &end);
  if (end == text.c_str() + at + key.size()) return std::nullopt;
  return v;
}

auto NumberBefore(const std::string& text, const std::string& unit) -> std::optional<double> {
  for (size_t at = text.find(unit); at != std::string::npos; at = text.find(unit, at + 1)) {
    size_t start = at;
    while (start > 0 && (std::isdigit(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '.')) --start;
    if (start < at) return std::strtod(text.c_str() + start, nullptr);
  }
  return std::nullopt;
}

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
  // A variant's memory and bandwidth, where the row states them (H100 96GB HBM2e 2.4TB/s).
  const std::string& gpu = r.at("gpu");
  if (auto gb = NumberBefore(gpu, "GB ")) hw.gpu_memory = *gb * 1e9;
  if (auto tbs = NumberBefore(gpu, "TB/s")) hw.hbm_bandwidth = *tbs * 1e12;
  return hw;
}

struct Case {
  avf::cost::Workload work;
  avf::cost::Layout layout;
  avf::cost::Hardware hw;
  double measured = 0;  // tokens/s per GPU
  bool table5 = false;  // Korthikanti et al. 2022 Table 5 (iteration time in the notes)
  // The row states its micro-batch and a recomputation the language has
  // (none, full, or the attention core), so its memory can be judged.
  bool memory_known = false;
  // torchtitan's selective checkpointing recomputes every other layer
  // (per-layer, ac_freq 2) or every other matrix product with the ops between
  // them (per-op): half of full recomputation's extra forward pass.
  bool half_recompute = false;
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
  auto batch = Number(r, "global_batch_seqs");
  auto gpus = Number(r, "num_gpus");
  if (auto iteration = NumberAfter(r.at("notes"), "iter_time_s=")) {
    return *batch * static_cast<double>(m.seq_len) / *iteration / *gpus;
  }
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
  // Megatron's parameter-gather overlap needs its distributed optimizer (ZeRO-1).
  if (Has(r, "notes", "--overlap-param-gather") && !Number(r, "zero_stage")) c.layout.zero = 1;
  if (Has(r, "notes", "DDP impl=local")) c.work.overlap_data_comm = false;
  // FSDP's reduce_dtype: fp32 in llm-foundry's DEFAULT mixed precision and
  // in torchtitan's; bf16 in llm-foundry's PURE.
  if (Has(r, "notes", "mp_mode DEFAULT") || Has(r, "source", "torchtitan")) c.work.reduce_in_fp32 = true;
  if (Has(r, "notes", "precision=amp_")) c.work.fp32_elementwise = true;
  for (const char* overlap : {"--tp-comm-overlap", "async TP", "AsyncTP"}) {
    if (Has(r, "notes", overlap)) c.work.overlap_tensor_comm = true;
  }
}

// Whether the notes say the run trained in FP8; a bf16 row's notes may
// mention FP8 to say it is not used ("no Float8", "w/o Float8") or to
// compare with another row ("Float8 MFU not comparable").
auto TrainsInFp8(std::string notes) -> bool {
  for (const char* denial : {"no Float8", "w/o Float8", "Float8 MFU not comparable"}) {
    for (size_t at = notes.find(denial); at != std::string::npos; at = notes.find(denial)) {
      notes.erase(at, std::strlen(denial));
    }
  }
  for (const char* fp8 : {"Float8", "float8", "FP8", "fp8"}) {
    if (notes.find(fp8) != std::string::npos) return true;
  }
  return false;
}

// Either a case to predict or why the row is left out.
auto Build(const Row& r, Case& c) -> std::string {
  auto hw = HardwareFor(r);
  if (!hw) return "GPU not one the stdlib describes";
  if (TrainsInFp8(r.at("notes"))) return "FP8 run: MFU against the bf16 peak is not comparable";
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
  // Runs published before FlashAttention, and Korthikanti's (data/README.md),
  // materialise the attention matrix; the others use FlashAttention.
  bool before_flash = Has(r, "source", "Narayanan et al. 2021") || Has(r, "source", "Korthikanti");
  c.work.attention = before_flash ? avf::cost::Attention::Materialized : avf::cost::Attention::Flash;
  c.table5 = Has(r, "source", "Korthikanti") && Has(r, "notes", "iter_time_s=");
  c.half_recompute = Has(r, "source", "torchtitan") && Has(r, "recompute", "selective");
  bool known_recompute =
      Has(r, "recompute", "none") || Has(r, "recompute", "full") || Has(r, "recompute", "selective (attention");
  c.memory_known = known_recompute && Number(r, "micro_batch").has_value();
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

auto Percentile(std::vector<double> v, double q) -> double {
  std::sort(v.begin(), v.end());
  double at = q * static_cast<double>(v.size() - 1);
  size_t low = static_cast<size_t>(at);
  size_t high = std::min(low + 1, v.size() - 1);
  return v[low] + (at - static_cast<double>(low)) * (v[high] - v[low]);
}

auto Mean(const std::vector<double>& v) -> double {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

struct Usable {
  size_t row = 0;
  std::string model;
  Case c;
};

// The rows the model predicts; `skipped` gets a line for each of the others.
auto Usables(const std::vector<std::vector<std::string>>& records, std::vector<std::string>& skipped)
    -> std::vector<Usable> {
  std::vector<Usable> out;
  for (size_t i = 1; i < records.size(); ++i) {
    Row row;
    for (size_t k = 0; k < records[0].size() && k < records[i].size(); ++k) row[records[0][k]] = records[i][k];
    Usable u{i, row["model"].substr(0, 34), {}};
    std::string skip = Build(row, u.c);
    if (skip.empty()) out.push_back(std::move(u));
    else skipped.push_back(fmt::format("{:<4} {:<34} skipped: {}\n", i, u.model, skip));
  }
  return out;
}

// The row's prediction; for half recomputation, the mean of the step times
// without and with full recomputation (and the memory of the full one).
auto PredictRow(const Case& c, const avf::cost::Calibration& cal) -> avf::cost::Prediction {
  if (!c.half_recompute) return avf::cost::Predict(c.work, c.layout, c.hw, cal);
  avf::cost::Layout none = c.layout, full = c.layout;
  none.recompute = avf::cost::Recompute::None;
  full.recompute = avf::cost::Recompute::Full;
  avf::cost::Prediction p = avf::cost::Predict(c.work, full, c.hw, cal);
  double step = (avf::cost::Predict(c.work, none, c.hw, cal).step_time + p.step_time) / 2;
  p.tokens_per_s *= p.step_time / step;
  p.step_time = step;
  return p;
}

auto PerGpu(const Case& c, const avf::cost::Prediction& p) -> double {
  return p.tokens_per_s / static_cast<double>(c.work.gpus);
}

auto ErrorOf(const Case& c, const avf::cost::Calibration& cal) -> double {
  return (PerGpu(c, PredictRow(c, cal)) - c.measured) / c.measured;
}

// Absolute errors of every usable row, of the ZeRO-3 rows and of Table 5.
struct Errors {
  std::vector<double> all, zero3, table5;
};

auto ErrorsOf(const std::vector<Usable>& rows, const avf::cost::Calibration& cal) -> Errors {
  Errors e;
  for (const Usable& u : rows) {
    double error = std::fabs(ErrorOf(u.c, cal));
    e.all.push_back(error);
    if (avf::cost::ClassOf(u.c.layout) == avf::cost::LayoutClass::Sharded) e.zero3.push_back(error);
    if (u.c.table5) e.table5.push_back(error);
  }
  return e;
}

// What the fit minimises: each target's figure over the target, summed, so
// that no class of rows is traded away for another.
auto FitObjective(const Errors& e) -> double {
  return Median(e.all) / 0.05 + Median(e.zero3) / 0.10 + Percentile(e.zero3, 0.9) / 0.25 + Mean(e.table5) / 0.0365 +
         Mean(e.all) / 0.10;
}

// Coordinate descent over the constants, in multiplicative steps that
// shrink when no step improves: deterministic, a few thousand predictions.
auto Fit(const std::vector<Usable>& rows) -> avf::cost::Calibration {
  avf::cost::Calibration best = avf::cost::kCalibration;
  double best_score = FitObjective(ErrorsOf(rows, best));
  double* fields[] = {
      &best.matmul_efficiency, &best.narrow_width, &best.attention_efficiency, &best.elementwise_bytes,
      &best.overlap,           &best.interference, &best.balance_exponent,     &best.attention_balance_exponent};
  for (double step = 0.2; step > 0.002; step /= 2) {
    for (bool improved = true; improved;) {
      improved = false;
      for (double* field : fields) {
        for (double factor : {1 + step, 1 / (1 + step)}) {
          double kept = *field;
          *field = kept * factor;
          if (best.matmul_efficiency > 1 || best.attention_efficiency > 1 || best.overlap > 1 ||
              best.interference > 1) {
            *field = kept;
            continue;
          }
          double score = FitObjective(ErrorsOf(rows, best));
          if (score < best_score - 1e-12) {
            best_score = score;
            improved = true;
          } else {
            *field = kept;
          }
        }
      }
    }
  }
  return best;
}

constexpr size_t kMinRowsPerBand = 10;

// calibration_bands.def: per layout class, the 10th and 90th percentiles of
// measured / predicted step time (= predicted / measured tokens/s).
void PrintBands(const std::vector<Usable>& rows) {
  fmt::print(
      "// Written by `avf-calibrate --bands ../shared/data/published-runs.csv`; do not\n"
      "// edit (test/cost/bands.test checks that it is current). Per layout class:\n"
      "// the 10th and 90th percentiles of measured / predicted step time over the\n"
      "// usable rows of that class (of every class when it has fewer than 10), and\n"
      "// their count.\n"
      "//\n"
      "//   CALIBRATION_BAND(LayoutClass, low, high, rows)\n"
      "#ifndef CALIBRATION_BAND\n"
      "#define CALIBRATION_BAND(Class, Low, High, Rows)\n"
      "#endif\n\n");
  using avf::cost::LayoutClass;
  std::vector<double> every;
  for (const Usable& u : rows) every.push_back(1 + ErrorOf(u.c, avf::cost::kCalibration));
  for (LayoutClass k : {LayoutClass::Sharded, LayoutClass::ModelParallel, LayoutClass::DataParallel}) {
    std::vector<double> ratios;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (avf::cost::ClassOf(rows[i].c.layout) == k) ratios.push_back(every[i]);
    }
    // Too few rows of the class for its percentiles to mean much: all rows.
    if (ratios.size() < kMinRowsPerBand) ratios = every;
    fmt::print("CALIBRATION_BAND({}, {:.3f}, {:.3f}, {})\n", avf::cost::Name(k), Percentile(ratios, 0.1),
               Percentile(ratios, 0.9), ratios.size());
  }
  fmt::print("\n#undef CALIBRATION_BAND\n");
}

// The planner's accuracy targets per class of rows (docs/calibration.md),
// checked with --targets.
struct Targets {
  bool enforce = false;
  double zero3_median = 0.10;
  double zero3_p90 = 0.25;
  double table5_mean = 0.0365;
};

auto TargetsMet(const Errors& e, const Targets& t) -> bool {
  if (!t.enforce) return true;
  bool met = true;
  if (!e.zero3.empty() && (Median(e.zero3) > t.zero3_median || Percentile(e.zero3, 0.9) > t.zero3_p90)) {
    fmt::print("target missed: ZeRO-3/FSDP rows\n");
    met = false;
  }
  if (!e.table5.empty() && Mean(e.table5) >= t.table5_mean) {
    fmt::print("target missed: Korthikanti Table 5\n");
    met = false;
  }
  return met;
}

void PrintSummary(const Errors& e, double bound) {
  fmt::print("rows compared: {}; median absolute error {:.1f}% (bound {:.1f}%); mean {:.1f}%\n", e.all.size(),
             100 * Median(e.all), bound, 100 * Mean(e.all));
  if (!e.zero3.empty()) {
    fmt::print("ZeRO-3/FSDP rows: {}; median {:.1f}% (target 10%), 90th percentile {:.1f}% (target 25%)\n",
               e.zero3.size(), 100 * Median(e.zero3), 100 * Percentile(e.zero3, 0.9));
  }
  if (!e.table5.empty()) {
    fmt::print("Korthikanti Table 5 rows: {}; mean absolute error {:.2f}% (target < 3.65%)\n", e.table5.size(),
               100 * Mean(e.table5));
  }
}

}  // namespace

auto main(int argc, char** argv) -> int {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: avf-calibrate published-runs.csv [--max-median-error PCT] [--targets] [--fit] [--bands]\n");
    return 2;
  }
  double bound = 15;
  Targets targets;
  bool fit = false;
  bool bands = false;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--max-median-error" && i + 1 < argc) bound = std::strtod(argv[++i], nullptr);
    else if (arg == "--targets") targets.enforce = true;
    else if (arg == "--fit") fit = true;
    else if (arg == "--bands") bands = true;
    else {
      std::fprintf(stderr, "avf-calibrate: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
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
  std::vector<std::string> skipped;
  std::vector<Usable> rows = Usables(records, skipped);
  if (rows.empty()) {
    std::fprintf(stderr, "avf-calibrate: no usable rows\n");
    return 2;
  }
  if (bands) {
    PrintBands(rows);
    return 0;
  }
  fmt::print("{:<4} {:<34} {:>6} {:>3} {:>3} {:>5} {:>12} {:>12} {:>8} {:>9}\n", "row", "model", "gpus", "tp", "pp",
             "dp", "predicted", "measured", "error", "mem GB");
  for (const std::string& line : skipped) fmt::print("{}", line);
  avf::cost::Calibration cal = fit ? Fit(rows) : avf::cost::kCalibration;
  int not_fitting = 0;
  for (const Usable& u : rows) {
    const Case& c = u.c;
    avf::cost::Prediction p = PredictRow(c, cal);
    double predicted = PerGpu(c, p);
    if (!p.fits && c.memory_known) ++not_fitting;
    fmt::print("{:<4} {:<34} {:>6} {:>3} {:>3} {:>5} {:>12.1f} {:>12.1f} {:>+7.1f}% {:>6.1f}{}\n", u.row, u.model,
               c.work.gpus, c.layout.tensor, c.layout.pipeline, c.layout.data, predicted, c.measured,
               100 * (predicted - c.measured) / c.measured, p.memory_per_gpu / 1e9,
               p.fits ? "" : (c.memory_known ? " > GPU memory" : " (layout not fully stated)"));
  }
  Errors e = ErrorsOf(rows, cal);
  PrintSummary(e, bound);
  bool targets_met = TargetsMet(e, targets);
  int judged =
      static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const Usable& u) { return u.c.memory_known; }));
  fmt::print("predicted not to fit: {} of {} rows that trained and state their memory layout\n", not_fitting, judged);
  if (fit) {
    fmt::print(
        "fitted: matmul_efficiency {:.3f}, narrow_width {:.0f}, balance_exponent {:.3f}, "
        "attention_efficiency {:.3f}, attention_balance_exponent {:.3f}, elementwise_bytes {:.1f}, overlap {:.3f}, "
        "interference {:.3f}\n",
        cal.matmul_efficiency, cal.narrow_width, cal.balance_exponent, cal.attention_efficiency,
        cal.attention_balance_exponent, cal.elementwise_bytes, cal.overlap, cal.interference);
  }
  return 100 * Median(e.all) <= bound && not_fitting == 0 && targets_met ? 0 : 1;
}
